"""`larik-jupyter` session commands, through the real entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from session_helpers import add_turn, digest, make_session

from larik_jupyter.frontends.cli import main
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.state import replay
from larik_jupyter.session.store import Session


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ls_and_ls_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_session(tmp_path, 2)
    code, out, _ = run(capsys, "ls", "--cwd", str(tmp_path))
    assert code == 0 and path.stem in out and "prompt 1" in out
    code, out, _ = run(capsys, "ls", "--cwd", str(tmp_path), "--json")
    data = json.loads(out)
    assert data[0]["id"] == path.stem and data[0]["message_count"] == 8 and data[0]["size"] == path.stat().st_size


def test_show_markdown_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = make_session(tmp_path, 1)
    code, out, _ = run(capsys, "show", str(path))
    assert code == 0 and out.startswith(f"# Session {path.stem}") and "## 1. User" in out
    code, out, _ = run(capsys, "show", str(path), "--json")
    data = json.loads(out)
    assert data["session"]["id"] == path.stem and len(data["entries"]) == 6 and data["prompt_positions"] == [0]


def test_unknown_id_is_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "show", "20200101-000000-abcdef")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "No session with id 20200101-000000-abcdef" in err and "larik-jupyter ls" in err


def test_check_reports_the_damaged_line_and_exits_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = make_session(tmp_path, 1)
    bad = make_session(tmp_path, 2)
    lines = bad.read_bytes().splitlines(keepends=True)
    lines[3] = b"\x00\x00\x00\n"
    bad.write_bytes(b"".join(lines))
    code, out, _ = run(capsys, "check", good.stem)
    assert code == 0 and out.startswith("ok ")
    code, out, _ = run(capsys, "check", "--all")
    assert code == 1
    assert f"{bad}:4: a run of NUL bytes" in out and f"ok {good}" in out


def test_fork_rewind_tree_and_rm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = make_session(tmp_path, 2)
    before = digest(src)
    code, out, err = run(capsys, "fork", str(src), "--at-message", "2")
    assert code == 2 and "nearest valid boundaries are 0 or 4" in err
    code, out, err = run(capsys, "fork", str(src), "--at", "3")
    assert code == 2 and "has 2 prompts; choose a prompt number from 1 to 2" in err
    with pytest.raises(SystemExit) as stop:
        run(capsys, "fork", str(src), "--at", "1", "--at-message", "4")
    assert stop.value.code == 2 and "--at-message: not allowed with argument --at" in capsys.readouterr().err
    code, out, _ = run(capsys, "fork", str(src), "--at", "1")
    new_id, new_path = out.splitlines()
    assert code == 0 and Path(new_path).name == f"{new_id}.jsonl" and Path(new_path).exists()
    assert replay(load_entries(Path(new_path)).entries).meta.fork_at == 4  # after prompt 1: message 4
    code, out, _ = run(capsys, "rewind", str(src), "2")
    assert code == 0 and out.splitlines()[3:] == ["prompt 2", "second line"]
    assert digest(src) == before
    code, out, _ = run(capsys, "tree", "--cwd", str(tmp_path), "--json")
    roots = json.loads(out)
    assert [r["id"] for r in roots] == [src.stem] and len(roots[0]["children"]) == 2
    code, out, _ = run(capsys, "tree", "--cwd", str(tmp_path))
    assert f"{new_id} (branched after prompt 1) (no prompt yet)" in out and "  1. [0] prompt 1\n" in out
    code, out, _ = run(capsys, "rm", new_id)
    assert code == 0 and not Path(new_path).exists()


def test_a_damaged_session_names_the_fork_command_that_recovers_its_valid_part(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = make_session(tmp_path, 3)
    lines = src.read_bytes().splitlines(keepends=True)
    lines[8] = b"not json\n"  # inside the second turn
    src.write_bytes(b"".join(lines))
    code, _, err = run(capsys, "fork", src.stem, "--at", "2")  # a prompt number needs the whole file
    assert code == 2 and f"`larik-jupyter fork {src.stem} --at-message 4`" in err
    code, out, _ = run(capsys, "fork", src.stem, "--at-message", "4")  # the command the error names
    assert code == 0
    branch = replay(load_entries(Path(out.splitlines()[1])).entries)
    assert [m.prompt_text() for m in branch.all if m.is_prompt()] == ["prompt 1\nsecond line"]


def test_export_command(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    path = make_session(tmp_path, 1)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "export", path.stem)
    assert code == 0 and Path(out.strip()) == tmp_path / ".larik" / "exports" / f"{path.stem}.md"
    code, _, err = run(capsys, "export", path.stem, out.strip())
    assert code == 2 and "already exists" in err


def test_python_dash_m_help_lists_the_session_commands() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "larik_jupyter", "--help"], capture_output=True, text=True, env=os.environ, timeout=60
    )
    assert result.returncode == 0
    for command in ("ls", "show", "export", "check", "fork", "rewind", "rm", "tree"):
        assert command in result.stdout


def test_branches_read_by_prompt_number_and_say_when_their_source_is_gone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = make_session(tmp_path, 2)  # prompts at messages 0 and 4
    code, out, _ = run(capsys, "fork", str(src), "--at", "1")
    branch_id, branch_path = out.splitlines()
    with Session.open(branch_path) as session:
        add_turn(session, "a different second prompt", 3)
    code, out, _ = run(capsys, "fork", str(src), "--at-message", "0")
    empty_id = out.splitlines()[0]

    code, out, _ = run(capsys, "tree", "--cwd", str(tmp_path))
    assert f"{branch_id} (branched after prompt 1)\n" in out
    assert "  2. [4] a different second prompt" in out and out.count("1. [0] prompt 1") == 1
    assert f"{empty_id} (branched at the start) (no prompt yet)" in out and "message" not in out
    code, out, _ = run(capsys, "ls", "--cwd", str(tmp_path))
    assert f"branched after prompt 1 of {src.stem}" in out and "@" not in out
    code, out, _ = run(capsys, "ls", "--cwd", str(tmp_path), "--json")
    assert {i["id"]: i["fork_prompt"] for i in json.loads(out)} == {src.stem: None, branch_id: 1, empty_id: 0}
    code, out, _ = run(capsys, "show", branch_id)
    assert f"- Forked from `{src.stem}` after prompt 1\n" in out

    run(capsys, "rm", src.stem)
    code, out, _ = run(capsys, "tree", "--cwd", str(tmp_path))
    assert f"{branch_id} (branched after prompt 1 of {src.stem}, which was deleted)" in out
    code, out, _ = run(capsys, "tree", "--cwd", str(tmp_path), "--json")
    assert {n["id"]: (n["fork_prompt"], n["parent_deleted"]) for n in json.loads(out)} == {
        branch_id: (1, True), empty_id: (0, True)
    }
    code, out, _ = run(capsys, "ls", "--cwd", str(tmp_path))
    assert f"branched at the start of {src.stem}, which was deleted" in out
