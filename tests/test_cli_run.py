"""`larik-jupyter run`: one headless turn in a real subprocess, in the notebook's sessions."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from larik_jupyter.agent.tool_calls import INTERRUPTED_RESULT
from larik_jupyter.session.catalog import list_sessions
from larik_jupyter.session.reader import load_entries
from tests.process_helpers import wait_until


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "larik_jupyter", "run", "--cwd", str(cwd), *args],
        capture_output=True, text=True, timeout=120,
    )


def script(path: Path, *responses: list[dict[str, object]]) -> str:
    path.write_text(json.dumps({"responses": [{"content": r} for r in responses]}))
    return f"scripted:{path}"


def test_run_without_yes_denies_asks_and_prints_the_denial(tmp_path: Path) -> None:
    model = script(tmp_path / "s.json",
                   [{"type": "tool_use", "name": "write", "input": {"path": "a.txt", "content": "a"}}],
                   [{"type": "text", "text": "Could not write."}])
    result = run("--model", model, "write a.txt", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "denied" in result.stdout and "Could not write." in result.stdout
    assert not (tmp_path / "a.txt").exists()


def test_run_with_yes_then_continue_uses_the_same_session(tmp_path: Path) -> None:
    first = script(tmp_path / "1.json",
                   [{"type": "tool_use", "name": "write", "input": {"path": "a.txt", "content": "a"}}],
                   [{"type": "text", "text": "Wrote it."}])
    assert run("--yes", "--model", first, "write a.txt", cwd=tmp_path).returncode == 0
    assert (tmp_path / "a.txt").read_text() == "a"
    second = script(tmp_path / "2.json", [{"type": "text", "text": "Still here."}])
    result = run("--continue", "--model", second, "are you there?", cwd=tmp_path)
    assert "Still here." in result.stdout
    (info,) = list_sessions(tmp_path)
    assert info.message_count == 6  # prompt, tool call, results, answer; prompt, answer


def test_run_reports_errors_with_a_non_zero_exit(tmp_path: Path) -> None:
    result = run("--session", "20990101-000000-abcdef", "hello", cwd=tmp_path)
    assert result.returncode == 2
    assert "20990101-000000-abcdef" in result.stderr and "Traceback" not in result.stderr
    empty = script(tmp_path / "e.json")
    failed = run("--model", empty, "hello", cwd=tmp_path)
    assert failed.returncode == 1 and "no response left" in failed.stdout + failed.stderr


def running_in_group(pgid: int) -> list[int]:
    """Processes of group `pgid` that still run (zombies waiting to be reaped are dead)."""
    alive = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            alive.append(int(name))
    return alive


def test_ctrl_c_during_bash_kills_its_process_group_at_once_and_exits_130(tmp_path: Path) -> None:
    pid_file, after = tmp_path / "pid", tmp_path / "after"
    model = script(tmp_path / "s.json",
                   [{"type": "tool_use", "name": "bash",
                     "input": {"command": f"echo $$ > {pid_file}; sleep 60; touch {after}"}}],
                   [{"type": "text", "text": "never asked"}])
    proc = subprocess.Popen(
        [sys.executable, "-m", "larik_jupyter", "run", "--yes", "--cwd", str(tmp_path), "--model", model, "go"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    wait_until(lambda: proc.poll() is not None or (pid_file.is_file() and pid_file.read_text().strip()),
               "the bash command to write its pid")
    assert proc.poll() is None, "the run ended before its command started"
    pgid = int(pid_file.read_text())
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    wait_until(lambda: not running_in_group(pgid), "the command's process group to be killed after Ctrl-C")
    killed_after = time.monotonic() - sent
    out, err = proc.communicate(timeout=60)

    # Killed: not left to run to its 60 s sleep's natural end.
    assert killed_after < 30, f"the command's group ran {killed_after:.2f} s after Ctrl-C"
    assert proc.returncode == 130 and "Interrupted" in err and "Traceback" not in err
    assert "turn 1 interrupted" in out
    assert not after.exists()
    (info,) = list_sessions(tmp_path)
    entries = load_entries(info.path).entries
    [result] = entries[-1].message.tool_results()
    assert result.is_error and result.content == INTERRUPTED_RESULT
