"""The data-safety defects of issue 14, hit through `larik-jupyter` as a user would: each test
hashes the data directory (and the temp tree) before and after."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from session_helpers import digest, make_session, tree_state

from larik_jupyter import paths
from larik_jupyter.checkpoint.store import CheckpointStore
from larik_jupyter.frontends.cli import main
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.state import INTERRUPTED_TOOL_RESULT, replay
from tests.process_helpers import wait_until


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def cli_process(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real entry point in its own process; a command that blocks (a FIFO read never ends) fails after 60 s."""
    return subprocess.run(
        [sys.executable, "-m", "larik_jupyter", *argv], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def state(tmp_path: Path) -> tuple[dict[str, str], dict[str, str]]:
    return tree_state(paths.data_dir()), tree_state(tmp_path)


def one_line(err: str) -> str:
    assert err.count("\n") == 1 and err.endswith("\n") and "Traceback" not in err, err
    return err.removeprefix("larik-jupyter: ").strip()


# -- 1. rm deletes only sessions -------------------------------------------------------------


def test_rm_refuses_everything_but_a_session_of_the_data_dir(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = make_session(project, 1)
    out = tmp_path / "out"
    out.mkdir()
    targets = {
        "notes.txt": "my notes\n",
        "...jsonl": "{}\n",  # its "id" would be `..`: the data directory
        "..jsonl": "{}\n",  # its "id" would be `.`: every checkpoint
        good.name: good.read_text(),  # a session's copy outside the data directory
    }
    for name, text in targets.items():
        (out / name).write_text(text)
    before = state(tmp_path)
    for name in targets:
        code, _, err = cli(capsys, "rm", str(out / name))
        line = one_line(err)
        assert code == 2 and line.startswith(f"Refusing to delete {out / name}: "), line
    code, _, err = cli(capsys, "rm", str(paths.sessions_dir(project)))
    assert code == 2 and "directory, not a regular file" in one_line(err)
    assert state(tmp_path) == before


def test_rm_removes_the_session_and_what_its_id_names_never_through_a_link(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keep = make_session(project, 1)
    gone = make_session(project, 1)
    (project / "a.txt").write_text("a\n")
    store = CheckpointStore(gone.stem, project)
    store.begin_turn()
    store.capture(project / "a.txt")
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine\n")
    gone.with_name(f"{gone.stem}-agents").symlink_to(precious)
    (gone.with_name(f"{gone.stem}.trace") / "http").mkdir(parents=True)
    before = state(tmp_path)

    code, out, _ = cli(capsys, "rm", gone.stem)

    assert code == 0 and gone.stem in out
    after = state(tmp_path)
    removed = {p for p in before[0] if gone.stem in p}
    assert removed and {p: h for p, h in before[0].items() if p not in removed} == after[0]
    assert after[1] == before[1] and (precious / "keep.txt").read_text() == "mine\n"
    assert keep.is_file() and not paths.checkpoints_dir(gone.stem).exists()


# -- 2. entries that are not regular files ---------------------------------------------------


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_directory_or_fifo_entry_is_reported_and_hides_nothing(project: Path, tmp_path: Path, kind: str) -> None:
    good = make_session(project, 1)
    bad = paths.sessions_dir(project) / "20260101-000000-abcdef.jsonl"
    bad.mkdir() if kind == "directory" else os.mkfifo(bad)
    what = "a directory" if kind == "directory" else "a FIFO"
    before = state(tmp_path)
    for argv in (["show", bad.stem], ["show", str(bad)], ["check", bad.stem], ["fork", bad.stem], ["rm", bad.stem]):
        result = cli_process(*argv, cwd=project)
        assert result.returncode != 0 and f"{what}, not a regular file" in one_line(result.stderr), argv
    listing = cli_process("ls", "--json", cwd=project)
    rows = {row["id"]: row for row in json.loads(listing.stdout)}
    assert listing.returncode == 0 and rows[good.stem]["error"] is None
    assert f"{what}, not a regular file" in rows[bad.stem]["error"]
    everything = cli_process("check", "--all", cwd=project)
    assert everything.returncode == 1 and f"ok {good}" in everything.stdout and what in everything.stdout
    tree = cli_process("tree", cwd=project)
    assert tree.returncode == 0 and "1. [0] prompt 1" in tree.stdout and f"{bad.stem} [damaged]" in tree.stdout
    assert state(tmp_path) == before


# -- 3. empty and torn-only files -----------------------------------------------------------


@pytest.mark.parametrize("content", [b"", b'{"id": "a", "type": "meta", "meta": {"cw'], ids=["empty", "torn-only"])
def test_empty_and_torn_only_files_give_one_corruption_error_everywhere(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_bytes(content)
    before = state(tmp_path)
    errors = set()
    for argv in (["show"], ["show", "--json"], ["export"], ["check"], ["fork"], ["checkpoints"], ["undo"]):
        code, _, err = cli(capsys, *argv, str(path))
        assert code != 0, argv
        errors.add(one_line(err))
    code, _, err = cli(capsys, "rewind", str(path), "1")
    errors.add(one_line(err))
    code, _, err = cli(capsys, "run", "--cwd", str(project), "--session", str(path), "hi")
    errors.add(one_line(err))
    [message] = errors
    assert message.startswith(f"{path}:1: no meta entry: the file ") and "left unchanged" in message
    assert state(tmp_path) == before


# -- 4. ids are matched in full -------------------------------------------------------------


def test_an_id_with_a_trailing_newline_is_not_an_id(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = make_session(project, 1)
    assert not paths.is_session_id(good.stem + "\n")
    for command in ("show", "rm", "fork"):
        code, _, err = cli(capsys, command, good.stem + "\n")
        assert code == 2 and "is neither a session id" in one_line(err)
    assert good.is_file()


# -- 5. fork at the end of a crashed session -------------------------------------------------


def test_fork_of_a_session_killed_while_a_tool_ran_closes_the_call(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "s.json"
    command = f"echo $$ > {tmp_path / 'pid'}; sleep 30"
    script.write_text(json.dumps({"responses": [{"content": [{"type": "tool_use", "name": "bash", "input": {"command": command}}]}]}))
    run = subprocess.Popen(
        [sys.executable, "-m", "larik_jupyter", "run", "--yes", "--cwd", str(project), "--model", f"scripted:{script}", "go"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        pid = tmp_path / "pid"
        wait_until(lambda: pid.is_file() and pid.read_text().strip(), "the bash command to write its pid")
        run.kill()  # a crash: nothing gets to write the tool's result
        run.wait(10)
    finally:
        if (tmp_path / "pid").is_file():
            os.killpg(int((tmp_path / "pid").read_text()), signal.SIGKILL)
    [src] = paths.sessions_dir(project).glob("*.jsonl")
    assert replay(load_entries(src).entries).interrupted  # the source ends in the open call
    source_digest = digest(src)

    code, out, _ = cli(capsys, "fork", src.stem)

    assert code == 0
    branch = Path(out.splitlines()[1])
    state_ = replay(load_entries(branch).entries)
    last = state_.all[-1]
    [result] = last.tool_results()
    assert last.role == "user" and result.is_error and result.content == INTERRUPTED_TOOL_RESULT
    assert state_.interrupted is None and state_.meta.fork_at == len(state_.all) - 1
    assert cli(capsys, "check", branch.stem)[0] == 0
    assert digest(src) == source_digest


# -- 6. a branch of a file outside the data dir ----------------------------------------------


def test_a_branch_of_a_file_elsewhere_lands_where_every_command_looks(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    original = make_session(project, 2)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    copy = elsewhere / "mine.jsonl"
    copy.write_bytes(original.read_bytes())
    before = tree_state(elsewhere)
    monkeypatch.chdir(tmp_path)

    code, out, _ = cli(capsys, "fork", str(copy))

    new_id, new_path = out.splitlines()
    assert code == 0 and Path(new_path).parent == paths.sessions_dir(project)
    assert tree_state(elsewhere) == before  # nothing written beside the source
    assert cli(capsys, "show", new_id)[0] == 0
    code, out, _ = cli(capsys, "ls", "--cwd", str(project))
    assert code == 0 and new_id in out
    monkeypatch.chdir(project)
    code, out, _ = cli(capsys, "tree")
    assert new_id in out


def test_continue_passes_over_a_newer_entry_that_is_not_a_file(project: Path, tmp_path: Path) -> None:
    good = make_session(project, 1)
    os.mkfifo(paths.sessions_dir(project) / "29990101-000000-abcdef.jsonl")  # "newest"
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"responses": [{"content": [{"type": "text", "text": "still here"}]}]}))
    result = subprocess.run(
        [sys.executable, "-m", "larik_jupyter", "run", "--continue", "--cwd", str(project),
         "--model", f"scripted:{script}", "hello again"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0 and "still here" in result.stdout and good.stem in result.stderr
