"""read, write, edit and multi_edit on real files: diffs, refusals, confinement, checkpoint capture."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from larik_jupyter.tools import Env, default_tools, tool_schemas
from larik_jupyter.tools.host import KernelHost
from tests.agent_helpers import Hooks, call, make_env


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


def test_read_numbers_lines_and_reads_a_range(root: Path) -> None:
    (root / "a.txt").write_text("one\ntwo\r\nthree\nfour\n")
    env = make_env(root)
    assert (
        call(env, "read", path="a.txt").content
        == "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour"
    )
    part = call(env, "read", path="a.txt", offset=2, limit=2).content
    assert part.splitlines() == [
        "     2\ttwo",
        "     3\tthree",
        "[showing lines 2-3 of 4; call again with offset=4 to read more]",
    ]


def test_read_cap_says_what_was_cut(root: Path) -> None:
    (root / "big.txt").write_text(
        "".join(f"line {i}\n" for i in range(1, 3001)) + "x" * 5000 + "\n"
    )
    result = call(make_env(root), "read", path="big.txt")
    assert (
        result.content.splitlines()[-1]
        == "[showing lines 1-2000 of 3001; call again with offset=2001 to read more]"
    )
    tail = call(make_env(root), "read", path="big.txt", offset=3001).content
    assert (
        "[… 3000 characters cut]" in tail
        and "[1 lines longer than 2000 characters were cut]" in tail
    )


@pytest.mark.parametrize(
    ("setup", "path", "message"),
    [
        (lambda r: None, "missing.txt", "missing.txt does not exist"),
        (lambda r: (r / "d").mkdir(), "d", "d is a directory; use ls"),
        (lambda r: (r / "b.bin").write_bytes(b"\x00\x01"), "b.bin", "b.bin is a binary file"),
    ],
)
def test_read_refusals_name_the_file(
    root: Path, setup: Callable[[Path], object], path: str, message: str
) -> None:
    setup(root)
    result = call(make_env(root), "read", path=path)
    assert result.is_error and message in result.content


def test_write_creates_with_diff_and_captures_first(root: Path) -> None:
    captured: list[Path] = []
    env = make_env(root, captured)
    result = call(env, "write", path="src/new.py", content="print(1)\n")
    assert not result.is_error
    assert (root / "src/new.py").read_text() == "print(1)\n"
    assert captured == [root / "src/new.py"]
    assert result.diff == "--- /dev/null\n+++ b/src/new.py\n@@ -0,0 +1 @@\n+print(1)\n"


def test_write_overwrite_diff_uses_a_b_paths(root: Path) -> None:
    (root / "f.txt").write_text("old\n")
    result = call(make_env(root), "write", path="f.txt", content="new")
    assert result.diff == (
        "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-old\n+new\n\\ No newline at end of file\n"
    )


def test_refused_capture_refuses_the_write_and_leaves_the_file(root: Path) -> None:
    (root / "keep.txt").write_text("original\n")

    def refuse(path: Path) -> None:
        raise OSError("disk full")

    env = Env(cwd=root, root=root, checkpoints=Hooks(file=refuse))
    calls: list[tuple[str, dict[str, Any]]] = [
        ("write", {"path": "keep.txt", "content": "x"}),
        ("edit", {"path": "keep.txt", "old_string": "original", "new_string": "x"}),
        (
            "multi_edit",
            {"path": "keep.txt", "edits": [{"old_string": "original", "new_string": "x"}]},
        ),
        ("write", {"path": "fresh.txt", "content": "x"}),
    ]
    for tool, args in calls:
        result = call(env, tool, **args)
        assert result.is_error
        assert "Could not checkpoint" in result.content and "disk full" in result.content
    assert (root / "keep.txt").read_text() == "original\n"
    assert not (root / "fresh.txt").exists()


def test_edit_replaces_one_and_reports_diff(root: Path) -> None:
    (root / "m.py").write_text("a = 1\nb = 2\n")
    captured: list[Path] = []
    result = call(
        make_env(root, captured), "edit", path="m.py", old_string="b = 2", new_string="b = 3"
    )
    assert result.content == "Edited m.py: replaced 1 occurrence."
    assert (root / "m.py").read_text() == "a = 1\nb = 3\n"
    assert "-b = 2\n+b = 3\n" in (result.diff or "")
    assert captured == [root / "m.py"]


def test_edit_missing_and_ambiguous_are_refused_saying_which(root: Path) -> None:
    (root / "m.py").write_text("x = 1\nx = 1\nx = 1\n")
    env = make_env(root)
    missing = call(env, "edit", path="m.py", old_string="y = 2", new_string="z")
    assert missing.is_error and "m.py: old_string was not found" in missing.content
    ambiguous = call(env, "edit", path="m.py", old_string="x = 1", new_string="x = 2")
    assert ambiguous.is_error and "m.py: old_string matches 3 places" in ambiguous.content
    assert "replace_all=true" in ambiguous.content
    assert (root / "m.py").read_text() == "x = 1\nx = 1\nx = 1\n"
    every = call(env, "edit", path="m.py", old_string="x = 1", new_string="x = 2", replace_all=True)
    assert every.content == "Edited m.py: replaced 3 occurrences."
    assert (root / "m.py").read_text() == "x = 2\nx = 2\nx = 2\n"


def test_edit_keeps_crlf_line_endings(root: Path) -> None:
    (root / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    call(make_env(root), "edit", path="w.txt", old_string="two", new_string="three")
    assert (root / "w.txt").read_bytes() == b"one\r\nthree\r\n"


def test_multi_edit_applies_in_order(root: Path) -> None:
    (root / "c.py").write_text("alpha beta\n")
    result = call(
        make_env(root),
        "multi_edit",
        path="c.py",
        edits=[
            {"old_string": "alpha", "new_string": "gamma"},
            {"old_string": "gamma beta", "new_string": "delta"},
        ],
    )
    assert not result.is_error
    assert (root / "c.py").read_text() == "delta\n"
    assert result.diff is not None and result.diff.startswith("--- a/c.py\n+++ b/c.py\n")


def test_multi_edit_is_all_or_nothing(root: Path) -> None:
    (root / "c.py").write_text("alpha beta\n")
    captured: list[Path] = []
    result = call(
        make_env(root, captured),
        "multi_edit",
        path="c.py",
        edits=[
            {"old_string": "alpha", "new_string": "gamma"},
            {"old_string": "nope", "new_string": "x"},
        ],
    )
    assert result.is_error
    assert "edit 2 of 2" in result.content and "no edit was applied" in result.content
    assert (root / "c.py").read_text() == "alpha beta\n"
    assert captured == []


def test_confinement_refuses_dotdot_absolute_and_symlink_escapes(
    root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("secret\n")
    (root / "link.txt").symlink_to(outside)
    (root / "linkdir").symlink_to(tmp_path)
    env = make_env(root)
    for path in ["../secret.txt", str(outside), "link.txt", "linkdir/secret.txt"]:
        read = call(env, "read", path=path)
        assert read.is_error and "outside the project root" in read.content, path
        write = call(env, "write", path=path, content="pwned")
        assert write.is_error, path
    assert "through a symlink" in call(env, "read", path="link.txt").content
    assert outside.read_text() == "secret\n"


def test_allow_outside_lets_a_permitted_path_through(root: Path, tmp_path: Path) -> None:
    other = tmp_path / "shared"
    other.mkdir()
    (other / "notes.md").write_text("hi\n")
    env = make_env(root, allow_outside=lambda p: p.is_relative_to(other))
    assert call(env, "read", path=str(other / "notes.md")).content == "     1\thi"
    assert call(env, "read", path="../secret").is_error


def test_relative_paths_follow_cwd_inside_the_root(root: Path) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "x.txt").write_text("x\n")
    env = Env(cwd=root / "sub", root=root)
    assert call(env, "read", path="x.txt").content == "     1\tx"
    result = call(env, "write", path="../top.txt", content="t\n")
    assert not result.is_error and (root / "top.txt").exists()


def test_bad_input_becomes_an_error_result(root: Path) -> None:
    env = make_env(root)
    tools = default_tools(env)
    missing = tools["edit"].run(env, {"path": "a"})
    assert missing.is_error and "missing the required input 'old_string'" in missing.content
    wrong = tools["read"].run(env, {"path": "a", "offset": "3"})
    assert wrong.is_error and "read.offset must be of type integer" in wrong.content
    nested = tools["multi_edit"].run(env, {"path": "a", "edits": [{"old_string": "x"}]})
    assert (
        nested.is_error
        and "multi_edit.edits[0] is missing the required input 'new_string'" in nested.content
    )


def test_arun_runs_the_tool_from_async_code(root: Path) -> None:
    env = make_env(root)
    result = asyncio.run(default_tools(env)["write"].arun(env, {"path": "a.txt", "content": "z"}))
    assert not result.is_error and (root / "a.txt").read_text() == "z"


def test_registry_has_kernel_tools_only_with_a_namespace(root: Path) -> None:
    plain = default_tools(make_env(root))
    assert list(plain) == [
        "read", "write", "edit", "multi_edit", "glob", "grep", "ls", "bash", "todo_write",
        "notebook_read", "notebook_edit",
    ]
    kernel = default_tools(make_env(root, host=KernelHost({})))
    assert list(kernel)[-5:] == ["python", "inspect_variables", "notebook_run", "answer", "notebook_check"]
    schemas = tool_schemas(kernel)
    assert [s.name for s in schemas] == list(kernel)
    edit = next(s for s in schemas if s.name == "edit")
    assert edit.input_schema["required"] == ["path", "old_string", "new_string"]
    assert set(edit.input_schema["properties"]) == {
        "path",
        "old_string",
        "new_string",
        "replace_all",
    }


def test_os_errors_become_error_results(root: Path) -> None:
    (root / "plain.txt").write_text("x\n")
    result = call(make_env(root), "write", path="plain.txt/inner.txt", content="y")
    assert result.is_error and result.content.startswith(
        "plain.txt/inner.txt its directory plain.txt is not a directory, so it was not written"
    )


def test_read_refuses_offset_zero_and_past_the_end(root: Path) -> None:
    (root / "a.txt").write_text("one\n")
    zero = call(make_env(root), "read", path="a.txt", offset=0)
    assert zero.is_error and "at least 1" in zero.content
    past = call(make_env(root), "read", path="a.txt", offset=5)
    assert past.is_error and "a.txt has 1 lines; offset 5 is past the end" in past.content


def test_nul_in_path_is_refused(root: Path) -> None:
    result = call(make_env(root), "read", path="a\0b")
    assert result.is_error and "NUL byte" in result.content


def test_huge_files_are_refused_before_loading(root: Path) -> None:
    with open(root / "huge.log", "wb") as f:
        f.truncate(60 * 1024 * 1024)  # sparse: no disk used
    result = call(make_env(root), "read", path="huge.log")
    assert result.is_error and "huge.log is 60 MB, too large to load" in result.content


def test_edit_keeps_bytes_that_are_not_utf8(root: Path) -> None:
    (root / "legacy.txt").write_bytes(b"caf\xe9\nname = old\n")
    env = make_env(root)
    assert call(env, "read", path="legacy.txt").content.splitlines()[0] == "     1\tcaf\ufffd"
    result = call(env, "edit", path="legacy.txt", old_string="old", new_string="new")
    assert (root / "legacy.txt").read_bytes() == b"caf\xe9\nname = new\n"
    assert result.diff is not None and " caf\ufffd\n" in result.diff
    result.diff.encode("utf-8")  # serialisable: no lone surrogates


def test_edit_matches_newlines_in_a_crlf_file(root: Path) -> None:
    (root / "w.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    result = call(make_env(root), "edit", path="w.txt", old_string="a\nb", new_string="x\ny")
    assert not result.is_error
    assert (root / "w.txt").read_bytes() == b"x\r\ny\r\nc\r\n"


def test_lone_surrogate_in_new_text_is_refused(root: Path) -> None:
    result = call(make_env(root), "write", path="s.txt", content="bad \ud800 char")
    assert result.is_error and "UTF-8 cannot hold" in result.content
    assert not (root / "s.txt").exists()


def test_snapshot_diff_is_shared_by_the_undo_panel_and_the_sidebar() -> None:
    from larik_jupyter.textdiff import snapshot_diff

    assert snapshot_diff("a.txt", None, b"x\n", limit=1000).startswith("--- /dev/null\n+++ b/a.txt")
    assert snapshot_diff("a.bin", b"\0\1", b"\0\2", limit=1000) == "Binary file a.bin changed.\n"
    assert snapshot_diff("a.bin", b"\xff", b"\xff", limit=1000) == ""
    long = snapshot_diff("big.txt", None, b"line\n" * 1000, limit=100)
    assert len(long) < 200 and long.endswith("(diff cut; open the file to see the rest)\n")


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("read", {"path": "pipe"}),
        ("write", {"path": "pipe", "content": "x"}),
        ("edit", {"path": "pipe", "old_string": "a", "new_string": "b"}),
        ("grep", {"pattern": "a", "path": "pipe"}),
    ],
)
def test_a_fifo_is_refused_without_blocking(root: Path, name: str, args: dict[str, Any]) -> None:
    """Nothing writes to the FIFO: reading it would wait forever. Each file tool says what it
    is at once (grep finds nothing in it) and the turn goes on."""
    import os
    import threading

    os.mkfifo(root / "pipe")
    results: list[Any] = []
    worker = threading.Thread(target=lambda: results.append(call(make_env(root), name, **args)), daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():  # unblock the reader so the test process can end
        fd = os.open(root / "pipe", os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        pytest.fail(f"{name} blocked on a FIFO")
    result = results[0]
    if name == "grep":
        assert result.content == "No matches for 'a'."
    else:
        assert result.is_error and "pipe is a FIFO, not a regular file" in result.content
    assert (root / "pipe").exists() and not (root / "pipe").is_file()
