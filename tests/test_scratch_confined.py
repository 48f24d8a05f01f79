"""Code run to check or replay cannot touch the user's files (issue 37): `/check`, the agent's
`notebook_check` and `larik-jupyter replay` run in a scratch copy behind a guard installed in
the kernel before its first cell. Each route ordinary code takes out of the copy (relative
and absolute paths, a symlinked folder, `%run` of a script, `!` and `%pip`, `os.chdir`) leaves
the folder's file hashes as they were, and the report names what was refused; replay in place
leaves a file changed since the session alone unless `--force`, and runs shell lines only
with `--include-shell`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import done, scripted, tool
from session_helpers import python_session, tree_state
from test_notebook_check import write_notebook
from test_notebook_kernel_undo import client, run_cells

from larik_jupyter import Agent, KernelHost
from larik_jupyter.llm.messages import Message, ToolResultBlock, ToolUseBlock, user_text
from larik_jupyter.session.store import Session


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """A project (with data, outputs, a script, a 2 GB sparse file and a symlink to a folder
    outside it) and that outside folder."""
    project = tmp_path / "proj"
    outside = tmp_path / "outside"
    (project / ".git").mkdir(parents=True)
    (project / "outdir").mkdir()
    (outside / "abs_dir").mkdir(parents=True)
    (project / "data.csv").write_text("a,b\n1,2\n")
    (project / "results.csv").write_text("old results\n")
    (project / "keep.txt").write_text("keep\n")
    (project / "outdir" / "a.txt").write_text("a\n")
    (project / "script.py").write_text(
        f"import os\nopen('made_by_script.txt', 'w').write('x')\nos.remove({str(outside / 'abs_dir' / 'x.txt')!r})\n"
    )
    with open(project / "big.bin", "wb") as big:
        big.truncate(2 * 1024**3)
    (outside / "raw.csv").write_text("raw\n")
    (outside / "abs_dir" / "x.txt").write_text("x\n")
    (project / "linked").symlink_to(outside)
    return {"project": project, "outside": outside, "root": tmp_path}


def both(world: dict[str, Path]) -> dict[str, str]:
    return {**tree_state(world["project"]), **tree_state(world["outside"])}


def unkind_cells(world: dict[str, Path]) -> list[tuple[str, int | None, list[str]]]:
    project, outside = world["project"], world["outside"]
    return [
        ("import os, shutil\nos.remove('data.csv')", 1, []),
        ("open('results.csv', 'w').write('overwritten')", 2, []),
        ("shutil.rmtree('outdir')\nos.rename('keep.txt', 'moved.txt')", 3, []),
        ("%run script.py", 4, []),
        (f"shutil.rmtree({str(outside / 'abs_dir')!r})", 5, []),
        ("os.remove('linked/raw.csv')", 6, []),
        (f"open({str(project / 'results.csv')!r}, 'w').write('absolute')", 7, []),
        ("!rm -rf linked/", 8, []),
        ("%pip install --no-index six", 9, []),
        ("try:\n    os.chdir('/')\nexcept OSError:\n    pass", 10, []),
        ("size = os.path.getsize('big.bin')", 11, []),
        # In the copy each change above took effect: a failure here would be reported.
        ("assert not os.path.exists('data.csv') and open('results.csv').read() == 'overwritten'\n"
         "assert os.path.exists('moved.txt') and not os.path.exists('outdir') and os.path.exists('made_by_script.txt')\n"
         "assert size == 2 * 1024**3 and os.getcwd().endswith('proj')", 12, []),
    ]


def test_the_agents_check_runs_every_unkind_cell_in_a_copy_and_names_each_refusal(
    world: dict[str, Path], tmp_path: Path
) -> None:
    project, outside = world["project"], world["outside"]
    write_notebook(project / "unkind.ipynb", unkind_cells(world))
    before = both(world)
    model = scripted(tmp_path, [tool("notebook_check", path="unkind.ipynb", timeout=240)], done())
    agent = Agent(project, model=model, yes=True, host=KernelHost({}))
    agent.run("check the notebook")
    result = agent.loop.session.state.all[-2].tool_results()[0].text()
    agent.close()
    assert both(world) == before, "the check changed the user's files"
    assert "The live kernel, the notebook and your files were not changed: the cells ran in a scratch copy of" in result
    refused = [line for line in result.splitlines() if "checked in a copy; this cell tried to" in line]
    expected = [
        ("cell 5", f"delete {outside / 'abs_dir' / 'x.txt'} outside it"),
        ("cell 6", f"delete the folder {outside / 'abs_dir'} outside it"),
        ("cell 7", f"delete {outside / 'raw.csv'} outside it"),
        ("cell 8", f"write {project / 'results.csv'} outside it"),
        ("cell 9", "run `rm -rf linked/`: a shell command cannot be kept inside the copy"),
        ("cell 10", "pip install --no-index six`: a shell command cannot be kept inside the copy"),
        ("cell 11", "change to the folder / outside it"),
    ]
    assert len(refused) == len(expected), result
    for line, (cell, words) in zip(refused, expected, strict=True):
        assert line.startswith(f"- {cell} (") and words in line, (line, words)
    assert "cell 13" not in result.split("Refused:")[0], "a change did not take effect in the copy"
    assert "7 problems found" in result and "Cells that fail" not in result  # each refusal told once


def test_check_reports_a_kernel_that_dies_at_once_with_its_cell(project: Path) -> None:
    write_notebook(project / "dies.ipynb", [("x = 1", 1, []), ("import os\nos._exit(1)", 2, []), ("y = 2", 3, [])])
    from larik_jupyter.tools.check.tool import run_check
    from tests.agent_helpers import make_env

    started = time.monotonic()
    report = run_check(make_env(project, host=KernelHost({})), "dies.ipynb", timeout=600)
    assert time.monotonic() - started < 60  # not the whole timeout
    assert report.stopped.startswith("the kernel died at cell 3 (")
    assert "The run ended early (the kernel died at cell 3" in report.text() and len(report.not_run) == 1


def test_check_in_a_kernel_leaves_the_folder_alone_and_refuses_pip(world: dict[str, Path]) -> None:
    project = world["project"]
    write_notebook(project / "unkind.ipynb", unkind_cells(world)[:9])
    before = both(world)
    nbc = client(project, ["%load_ext larik_jupyter", "%larik /check unkind.ipynb --timeout 240", "print('still here')"])
    with nbc.setup_kernel():
        texts = run_cells(nbc)
    assert both(world) == before
    html = "".join(o.get("data", {}).get("text/html", "") for o in nbc.nb.cells[1].outputs)
    assert "Refused: changes outside the scratch copy, shell commands and connections" in html
    assert "pip install --no-index six`: a shell command cannot be kept inside the copy" in html
    assert "your files were not changed" in html and "still here" in texts[2]


def _session(cwd: Path, calls: list[tuple[str, dict[str, Any], str, str | None]]) -> Path:
    """A closed session of `cwd`, one prompt per (tool, input, result, source of a run cell)."""
    with Session.create(cwd, "scripted", "demo") as session:
        for n, (name, args, out, source) in enumerate(calls, 1):
            session.append_message(user_text(f"step {n}"))
            call = ToolUseBlock(id=f"toolu_{n}", name=name, input=args)
            session.append_message(Message(role="assistant", content=[call]))
            session.append_message(Message(role="user", content=[ToolResultBlock(tool_use_id=call.id, content=out, source=source)]))
        return session.path


def _replay(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "larik_jupyter", "replay", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_replay_in_a_copy_refuses_absolute_paths_and_symlinks_out_and_says_so(world: dict[str, Path]) -> None:
    project, outside = world["project"], world["outside"]
    path = python_session(project, [
        (f"import shutil\nshutil.rmtree({str(outside / 'abs_dir')!r})", "(no output)"),
        ("import os\nos.remove('linked/raw.csv')", "(no output)"),
        ("open('results.csv', 'w').write('new')\nprint('wrote')", "wrote"),
    ])
    before = both(world)
    done_ = _replay(project, path.stem)
    assert both(world) == before, done_.stdout
    rows = [line.split() for line in done_.stdout.splitlines() if line.strip()[:1].isdigit() and "python" in line]
    assert [row[-1] for row in rows] == ["failed", "failed", "same"], done_.stdout
    assert f"replayed in a copy; this cell tried to delete the folder {outside / 'abs_dir'} outside it" in done_.stdout
    assert f"replayed in a copy; this cell tried to delete {outside / 'raw.csv'} outside it" in done_.stdout
    assert done_.returncode == 2
    shell = _replay(project, path.stem, "--include-shell")
    assert shell.returncode == 2 and "add --in-place to run them" in shell.stderr and "Traceback" not in shell.stderr


def test_replay_in_place_leaves_what_the_user_changed_since_and_skips_shell_lines(project: Path) -> None:
    (project / "victim").mkdir()
    (project / "victim" / "v.txt").write_text("v\n")
    (project / "results.csv").write_text("as the session left it\n")
    run = "print('hi')\n!rm -rf victim\nprint('after')"
    path = _session(project, [
        ("write", {"path": "report.txt", "content": "agent's report\n"}, "Wrote report.txt", None),
        ("python", {"code": "open('results.csv', 'w').write('replayed')\nprint('ok')"}, "ok", None),
        ("notebook_run", {"path": "work.ipynb", "cell_id": "c"}, "hi\nafter", run),
        ("bash", {"command": "rm -rf victim"}, "", None),
    ])
    later = time.time() + 60  # the user's edits, after the session's last entry
    (project / "report.txt").write_text("the user's own report\n")
    for name in ("report.txt", "results.csv"):
        os.utime(project / name, (later, later))
    before = tree_state(project)
    kept = _replay(project, path.stem, "--in-place")
    after = tree_state(project)
    assert after == before, kept.stdout
    out = kept.stdout
    assert f"replayed in place; {project / 'report.txt'} changed since the session, so it is left alone (--force replays over it)" in out
    assert f"{project / 'results.csv'} changed since the session" in out
    assert "shell line not replayed (--include-shell runs it): !rm -rf victim" in out
    assert "shell commands are not replayed (--include-shell runs them): rm -rf victim" in out
    rows = {line.split()[2]: line.split()[-1] for line in out.splitlines() if line.strip()[:1].isdigit()}
    assert rows["write:"] == "skipped" and rows["notebook_run:"] == "same", out
    # The same replay, told to: the user's changes are replayed over and the shell runs.
    forced = _replay(project, path.stem, "--in-place", "--force", "--include-shell")
    assert (project / "report.txt").read_text() == "agent's report\n", forced.stdout
    assert (project / "results.csv").read_text() == "replayed" and not (project / "victim").exists()


def test_check_reads_beside_the_project_as_there_and_writes_nothing_there(world: dict[str, Path]) -> None:
    from larik_jupyter.tools.check.tool import run_check
    from tests.agent_helpers import make_env

    project = world["project"]
    write_notebook(project / "sibling.ipynb", [
        ("raw = open('../outside/raw.csv').read()\nassert raw == 'raw\\n'", 1, []),
        ("open('../outside/raw.csv', 'w').write('changed')", 2, []),
    ])
    before = both(world)
    report = run_check(make_env(project, host=KernelHost({})), "sibling.ipynb", timeout=120)
    assert both(world) == before
    assert not report.failures and len(report.refused) == 1, report.text()
    assert f"tried to write {world['outside'] / 'raw.csv'} outside it" in report.refused[0].message


def test_a_checked_load_ext_leaves_the_users_larik_data_alone(project: Path, larik_dirs: dict[str, Path]) -> None:
    from larik_jupyter.tools.check.tool import run_check
    from tests.agent_helpers import make_env

    # A turn snapshot old enough for the retention prune `%load_ext` starts in the background.
    turn = larik_dirs["data"] / "checkpoints" / "20200101-000000-abcdef" / "1"
    turn.mkdir(parents=True)
    (turn / "manifest.json").write_text("{}")
    old = time.time() - 30 * 86400
    os.utime(turn / "manifest.json", (old, old))
    write_notebook(project / "loads.ipynb", [("%load_ext larik_jupyter", 1, []), ("import time\ntime.sleep(2)", 2, [])])
    before = tree_state(larik_dirs["data"])
    report = run_check(make_env(project, host=KernelHost({})), "loads.ipynb", timeout=120)
    assert tree_state(larik_dirs["data"]) == before
    assert report.problems == 0, report.text()


def test_a_write_in_c_or_to_a_large_linked_file_leaves_the_original(project: Path) -> None:
    from larik_jupyter.tools.check.tool import run_check
    from tests.agent_helpers import make_env

    (project / "data.csv").write_text("a,b\n1,2\n")
    with open(project / "big.csv", "wb") as big:  # over the size copied outright: linked
        big.write(b"x" * (65 * 1024 * 1024))
    write_notebook(project / "writes.ipynb", [
        # What a library writing in C does (pyarrow, h5py): no Python `open` for the guard to see.
        ("import ctypes, os\nlibc = ctypes.CDLL(None)\n"
         "fd = libc.open(b'data.csv', os.O_WRONLY | os.O_TRUNC)\nassert fd >= 0 and libc.close(fd) == 0", 1, []),
        ("with open('big.csv', 'ab') as f:\n    f.write(b'appended')", 2, []),
        ("assert os.path.getsize('data.csv') == 0 and os.path.getsize('big.csv') == 65 * 1024 * 1024 + 8", 3, []),
    ])
    before = tree_state(project)
    report = run_check(make_env(project, host=KernelHost({})), "writes.ipynb", timeout=120)
    assert report.problems == 0, report.text()
    assert tree_state(project) == before
