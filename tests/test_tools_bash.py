"""bash with real subprocesses: output, timeouts and interrupts killing the process group,
checkpoint_paths capture, and changes made outside the checkpoints reported as not undoable."""

from __future__ import annotations

import _thread
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from larik_jupyter.tools import Env, ToolResult, default_tools
from larik_jupyter.tools.files.snapshot import changes, take_snapshot
from tests.agent_helpers import Hooks
from tests.process_helpers import exited, wait_until


def call(env: Env, **args: object) -> ToolResult:
    return default_tools(env)["bash"].run(env, args)


def gone(pid: int) -> bool:
    """Wait for a process to exit; fails naming it when it does not."""
    return wait_until(lambda: exited(pid), f"background process {pid} to be killed")


def pid_written(path: Path) -> bool:
    """Whether the command under test wrote its background pid to `path`."""
    return path.exists() and bool(path.read_text().strip())


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


@pytest.fixture
def captures() -> list[list[Path]]:
    return []


@pytest.fixture
def env(root: Path, captures: list[list[Path]]) -> Env:
    return Env(cwd=root, root=root, checkpoints=Hooks(paths=captures.append))


def test_runs_in_cwd_and_reports_output_and_exit_code(env: Env, root: Path) -> None:
    ok = call(env, command="pwd; echo err >&2")
    assert ok.content == f"{root}\nerr" and not ok.is_error
    failed = call(env, command="echo boom; exit 3")
    assert failed.is_error and failed.content == "boom\n[exit code 3]"
    assert call(env, command="true").content == "(no output)"


def test_timeout_kills_the_whole_process_group(env: Env, root: Path) -> None:
    started = time.monotonic()
    result = call(env, command="sleep 60 & echo $! > bg.pid; sleep 60", timeout=1)
    assert time.monotonic() - started < 30  # killed: not the 60 s sleep's natural end
    assert (
        result.is_error
        and "[timed out after 1 s; the command and its child processes were killed]"
        in result.content
    )
    assert gone(int((root / "bg.pid").read_text()))


def test_stop_event_interrupts_and_kills_children(env: Env, root: Path) -> None:
    outcome: list[ToolResult] = []
    worker = threading.Thread(
        target=lambda: outcome.append(call(env, command="sleep 60 & echo $! > bg.pid; sleep 60"))
    )
    started = time.monotonic()
    worker.start()
    wait_until(lambda: pid_written(root / "bg.pid"), "the command to write bg.pid")
    env.call.stop_event.set()
    worker.join(timeout=30)
    assert not worker.is_alive() and time.monotonic() - started < 30  # not the 60 s sleep's end
    assert (
        "[interrupted by the user; the command and its child processes were killed]"
        in outcome[0].content
    )
    assert gone(int((root / "bg.pid").read_text()))


def test_background_process_holding_output_does_not_hang(env: Env, root: Path) -> None:
    started = time.monotonic()
    result = call(env, command="echo started; sleep 60 & echo $! > bg.pid")
    pid = int((root / "bg.pid").read_text())
    try:
        assert time.monotonic() - started < 30  # not held until the 60 s background sleep ends
        assert result.content.startswith("started")
        assert (
            "[background processes kept running; their later output is not shown]" in result.content
        )
    finally:
        os.kill(pid, signal.SIGKILL)


def test_output_is_capped_keeping_head_and_tail(env: Env) -> None:
    result = call(env, command="echo FIRST; head -c 100000 /dev/zero | tr '\\0' x; echo; echo LAST")
    assert result.content.startswith("FIRST") and result.content.rstrip().endswith("LAST")
    assert "bytes of output cut" in result.content and len(result.content) < 31_000


def test_uncaptured_changes_are_listed_as_not_undoable(
    env: Env, root: Path, captures: list[list[Path]]
) -> None:
    (root / ".gitignore").write_text("ignored/\n")
    (root / "changed.txt").write_text("v1\n")
    (root / "deleted.txt").write_text("bye\n")
    (root / "captured.txt").write_text("old\n")
    (root / "config.txt").write_text("c\n")
    (root / "ignored").mkdir()
    env.checkpoint_paths = ["config.txt"]
    result = call(
        env,
        command="echo new > created.txt; echo v2 >> changed.txt; rm deleted.txt; "
        "echo new > captured.txt; echo c2 >> config.txt; echo x > ignored/cache; mkdir -p .git; echo x > .git/HEAD",
        checkpoint_paths=["captured.txt"],
    )
    assert captures == [[root / "captured.txt", root / "config.txt"]]
    assert result.uncaptured == [
        ("changed.txt", "changed"),
        ("created.txt", "created"),
        ("deleted.txt", "deleted"),
    ]
    assert "outside the checkpoints, not undoable" in result.content
    assert (
        "  created: created.txt\n" in result.content and "  deleted: deleted.txt" in result.content
    )
    assert "captured.txt" not in result.content.split("not undoable")[1]


def test_checkpoint_paths_expand_globs_and_directories(
    env: Env, root: Path, captures: list[list[Path]]
) -> None:
    (root / "data").mkdir()
    for name in ("a.csv", "b.csv", "c.txt"):
        (root / "data" / name).write_text(name)
    (root / "out").mkdir()
    (root / "out" / "r.json").write_text("{}")
    result = call(env, command="rm data/a.csv", checkpoint_paths=["data/*.csv", "out", "later.txt"])
    assert captures == [
        [root / "data/a.csv", root / "data/b.csv", root / "later.txt", root / "out/r.json"]
    ]
    assert result.uncaptured == [] and not (root / "data/a.csv").exists()


def test_refused_capture_does_not_run_the_command(root: Path) -> None:
    def refuse(paths: list[Path]) -> None:
        raise OSError("no space left")

    env = Env(cwd=root, root=root, checkpoints=Hooks(paths=refuse))
    result = call(env, command="echo ran > ran.txt", checkpoint_paths=["ran.txt"])
    assert result.is_error and "the command was not run" in result.content
    assert not (root / "ran.txt").exists()


def test_checkpoint_paths_outside_the_root_are_refused(env: Env, root: Path) -> None:
    result = call(env, command="true", checkpoint_paths=["../elsewhere.txt"])
    assert result.is_error and "outside the project root" in result.content


def test_bad_timeout_is_refused(env: Env) -> None:
    result = call(env, command="true", timeout=0)
    assert result.is_error and "timeout must be between 0 and 600" in result.content


def test_snapshot_is_bounded_and_then_compares_only_what_it_saw(root: Path) -> None:
    for i in range(10):
        (root / f"f{i}.txt").write_text("x")
    cut = take_snapshot(root, max_files=5)
    assert not cut.complete and len(cut.files) == 5
    (root / "f0.txt").write_text("changed")
    (root / "f9.txt").unlink()
    assert changes(cut, take_snapshot(root, max_files=5)) == [("f0.txt", "changed")]
    full_before = take_snapshot(root)
    (root / "new.txt").write_text("n")
    assert changes(full_before, take_snapshot(root)) == [("new.txt", "created")]


def test_keyboard_interrupt_kills_the_group_and_propagates(env: Env, root: Path) -> None:
    """A kernel interrupt (SIGINT -> KeyboardInterrupt) while bash runs on the main thread."""

    def interrupt_when_started() -> None:
        wait_until(lambda: pid_written(root / "bg.pid"), "the command to write bg.pid")
        _thread.interrupt_main()

    threading.Thread(target=interrupt_when_started, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        call(env, command="sleep 60 & echo $! > bg.pid; sleep 60")
    assert time.monotonic() - started < 30  # interrupted: not the 60 s sleep's natural end
    assert gone(int((root / "bg.pid").read_text()))
