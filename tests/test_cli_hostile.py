"""Hostile input to every `larik-jupyter` command that takes an ID or a PATH: random strings,
`..` and `.`, absolute paths, files that are not sessions, directories, FIFOs, symlinks, empty
and torn files. Each must fail with one line on stderr, no traceback, within 5 s, and leave
the data directory and the temp tree exactly as they were."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from session_helpers import make_session, tree_state

from larik_jupyter import paths
from larik_jupyter.checkpoint.store import CheckpointStore
from larik_jupyter.frontends.cli import main

# Every command taking an ID or PATH, as argv for a given value (`--` keeps a value that
# starts with `-` an argument).
COMMANDS: dict[str, Callable[[str], list[str]]] = {
    "show": lambda v: ["show", "--", v],
    "show --json": lambda v: ["show", "--json", "--", v],
    "export": lambda v: ["export", "--", v],
    "check": lambda v: ["check", "--", v],
    "fork": lambda v: ["fork", "--", v],
    "fork --at 1": lambda v: ["fork", "--at", "1", "--", v],
    "fork --at-message 0": lambda v: ["fork", "--at-message", "0", "--", v],
    "rewind": lambda v: ["rewind", "--", v, "1"],
    "rm": lambda v: ["rm", "--", v],
    "checkpoints": lambda v: ["checkpoints", "--", v],
    "undo": lambda v: ["undo", "--", v],
    "run --session": lambda v: ["run", "--model", "scripted:demo", f"--session={v}", "hello"],
}

TORN = b'{"id": "a1", "type": "meta", "meta": {"cwd": "/x"'


class Hostile:
    """A project with one good session (and a checkpoint), and a zoo of bad entries."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.project = tmp_path / "proj"
        self.project.mkdir()
        self.good = make_session(self.project, 2)
        (self.project / "a.txt").write_text("before\n")
        store = CheckpointStore(self.good.stem, self.project)
        store.begin_turn()
        store.capture(self.project / "a.txt")
        folder = paths.sessions_dir(self.project)
        bad = {name: folder / f"20260101-000000-{name}.jsonl" for name in ("aaaaaa", "bbbbbb", "cccccc", "dddddd", "eeeeee", "ffffff")}
        bad["aaaaaa"].mkdir()
        os.mkfifo(bad["bbbbbb"])
        bad["cccccc"].symlink_to(self.good)
        bad["dddddd"].write_bytes(b"")
        bad["eeeeee"].write_bytes(TORN)
        bad["ffffff"].symlink_to(tmp_path / "nowhere.jsonl")
        out = tmp_path / "out"
        out.mkdir()
        (out / "notes.txt").write_text("my notes\n")
        (out / "...jsonl").write_text("not a session\n")
        (out / "..jsonl").write_text("{}\n")
        (out / "json.jsonl").write_text('{"a": 1}\n')
        (out / "dir.jsonl").mkdir()
        os.mkfifo(out / "fifo.jsonl")
        (out / "link.jsonl").symlink_to(self.good)
        (out / "empty.jsonl").write_bytes(b"")
        (out / "torn.jsonl").write_bytes(TORN)
        (out / f"{self.good.stem}-copy.jsonl").write_bytes(b"")
        self.values = [
            *(p.stem for p in bad.values()),
            *(str(p) for p in bad.values()),
            *(str(p) for p in sorted(out.iterdir())),
            "../out/notes.txt",
            "../out/...jsonl",
            "../out/fifo.jsonl",
            ".",
            "..",
            "../..",
            "/",
            "",
            str(folder),
            str(paths.data_dir()),
            str(paths.checkpoints_dir(self.good.stem)),
            "nope",
            f"{self.good.stem}\n",
            "20260101-000000-ABCDEF",
            self.good.stem[:-1],
            "٢٠٢٦٠١٠١-000000-abcdef",
            "../" * 40 + "etc/passwd",
            "x" * 5000,
            "a\x00b",
            "~no-such-user-xyz/s.jsonl",
        ]

    def snapshot(self) -> tuple[dict[str, str], dict[str, str]]:
        return tree_state(paths.data_dir()), tree_state(self.tmp)


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Hostile:
    zoo = Hostile(tmp_path)
    monkeypatch.chdir(zoo.project)
    return zoo


def run_bounded(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str, float]:
    """`main(argv)` on a thread, so a command that blocks fails the test instead of hanging it."""
    result: list[int] = []
    started = time.monotonic()
    worker = threading.Thread(target=lambda: result.append(main(argv)), daemon=True)
    worker.start()
    worker.join(30)
    seconds = time.monotonic() - started
    out, err = capsys.readouterr()
    assert result, f"{argv} still running after 30 s"
    return result[0], out, err, seconds


def problems(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    code, _out, err, seconds = run_bounded(argv, capsys)
    found = []
    if code == 0:
        found.append("exit 0")
    if err.count("\n") != 1 or not err.endswith("\n"):
        found.append(f"stderr is not one line: {err!r}")
    if "Traceback" in err:
        found.append("traceback")
    if seconds >= 30:  # a command that blocks: it never ends
        found.append(f"took {seconds:.1f} s")
    return found


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_hostile_value_fails_with_one_line_and_changes_nothing(
    hostile: Hostile, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = hostile.snapshot()
    failures = {}
    for value in hostile.values:
        found = problems(COMMANDS[command](value), capsys)
        if found:
            failures[value] = found
        assert hostile.snapshot() == before, f"{command} {value!r} changed files"
    assert failures == {}
    assert hostile.good.is_file() and not (hostile.project / ".larik").exists()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.text(max_size=60), command=st.sampled_from(sorted(COMMANDS)))
def test_random_strings_fail_with_one_line_and_change_nothing(
    hostile: Hostile, capsys: pytest.CaptureFixture[str], value: str, command: str
) -> None:
    before = hostile.snapshot()
    assert problems(COMMANDS[command](value), capsys) == []
    assert hostile.snapshot() == before


def test_export_never_writes_over_an_existing_path_of_any_kind(
    hostile: Hostile, capsys: pytest.CaptureFixture[str]
) -> None:
    existing = [v for v in hostile.values if "\0" not in v and os.path.lexists(v)]
    assert len(existing) > 20
    before = hostile.snapshot()
    failures = {}
    for value in existing:
        found = problems(["export", hostile.good.stem, "--", value], capsys)
        if found:
            failures[value] = found
    assert failures == {}
    assert hostile.snapshot() == before
