"""`larik-jupyter run`: one headless turn in a real subprocess, in the notebook's sessions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from larik_jupyter.session.catalog import list_sessions


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
