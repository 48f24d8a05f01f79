"""Which session is "the latest" (the one last written to), and sessions another kernel holds:
`/resume --last`, `run --continue`, `Agent.resume(last=True)`, listings, and resume or fork of a
held session, through the API, a `KernelSession`, the CLI and a real kernel (nbclient)."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from session_helpers import add_turn, make_session

from larik_jupyter import Agent, paths
from larik_jupyter.frontends.notebook.kernel import KernelSession
from larik_jupyter.frontends.notebook.widgets.sessions import SessionsBrowser
from larik_jupyter.session.catalog import latest, list_sessions
from larik_jupyter.session.entry import now_rfc3339
from larik_jupyter.session.reader import load_entries
from larik_jupyter.session.state import replay
from larik_jupyter.session.store import Session
from tests.agent_helpers import done, scripted
from tests.process_helpers import wait_until


@pytest.fixture(autouse=True)
def anthropic_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sessions here are recorded with an Anthropic model, which a resume reopens; no
    request is ever sent to it."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-never-sent")


def created_earlier_written_later(cwd: Path) -> tuple[Path, Path]:
    """Two sessions of `cwd`: `early` (created in 2025) gets a turn after `newer` (created
    now) was written, so `early` is the one last written to."""
    made = make_session(cwd, 1)
    early = made.with_name(f"{paths.new_session_id(datetime(2025, 1, 1, 9))}.jsonl")
    made.rename(early)
    newer = make_session(cwd, 1)
    # Entry times are in milliseconds: `early` is written after `newer` only once the clock moved on.
    newer_written = load_entries(newer).entries.outline(-1).time
    wait_until(lambda: now_rfc3339() > newer_written, "the clock to pass the newer session's last write")
    with Session.open(early) as session:
        add_turn(session, "written last", 9)
    return early, newer


def prompts_of(path: Path) -> list[str]:
    state = replay(load_entries(path).entries)
    return [state.all[i].prompt_text() for i in state.prompt_positions]


def test_latest_and_listings_go_by_the_last_entry_not_the_creation(project: Path) -> None:
    early, newer = created_earlier_written_later(project)
    found = latest(project)
    assert found is not None and found.id == early.stem
    items = list_sessions(project)
    assert [i.id for i in items] == [early.stem, newer.stem]
    assert items[0].updated > items[1].updated and items[0].time < items[1].time
    assert items[0].updated == load_entries(early).entries.outline(-1).time


def test_agent_resume_last_and_run_continue_pick_the_session_written_last(project: Path, tmp_path: Path) -> None:
    early, _ = created_earlier_written_later(project)
    agent = Agent(project, model=scripted(tmp_path, done("fine")), yes=True)
    agent.resume(last=True)
    assert agent.session_id == early.stem
    agent.close()
    run = subprocess.run(
        [sys.executable, "-m", "larik_jupyter", "run", "--cwd", str(project), "--continue",
         "--model", scripted(tmp_path, done("continued")), "go on"],
        capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert prompts_of(early)[-1] == "go on"


def test_resume_of_a_held_session_continues_on_a_new_branch_and_says_so(project: Path, tmp_path: Path) -> None:
    source = make_session(project, 2)
    with Session.open(source):  # another holder: this test process itself, on its own descriptor
        (row,) = list_sessions(project)
        assert row.held
        agent = Agent(project, model=scripted(tmp_path, done("ok")), yes=True, session=source.stem)
        assert agent.branched_from == source.stem and agent.session_id != source.stem
        assert agent.notices[-1] == (
            f"Session {source.stem} is open in another kernel; continuing on a new branch {agent.session_id} of it."
        )
        assert prompts_of(agent.session_path) == prompts_of(source)
        agent.run("on the branch")
        agent.close()
    assert prompts_of(source) == ["prompt 1\nsecond line", "prompt 2\nsecond line"]
    assert not next(i for i in list_sessions(project) if i.id == source.stem).held


def test_fork_and_rewind_of_a_held_session_from_the_widgets(project: Path, tmp_path: Path) -> None:
    source = make_session(project, 3)
    before = source.read_bytes()
    kernel = KernelSession(project, model=scripted(tmp_path, done("ok")), yes=True, set_next_cell=lambda _: None)
    with Session.open(source):
        branch = kernel.sessions.fork(2, session=source.stem)  # the tree's "Fork here" after prompt 2
        assert kernel.require().session_id == branch.stem and kernel.require().branched_from is None
        assert prompts_of(branch) == ["prompt 1\nsecond line", "prompt 2\nsecond line"]
        end = kernel.sessions.fork(session=source.stem)  # the sessions browser's Fork: at its end
        assert len(prompts_of(end)) == 3
        code = "%%larik\n" + kernel.sessions.rewind(2, session=source.stem)  # the tree's "Rewind here"
        assert code == "%%larik\nprompt 2\nsecond line"
        assert prompts_of(kernel.require().session_path) == ["prompt 1\nsecond line"]
        browser = SessionsBrowser(kernel)
        text = browser.static_text()
        assert f"{source.stem}  last active" in text and "(open in a kernel)" in text
        assert f"branched after prompt 2 of {source.stem}" in text
    assert source.read_bytes() == before
    kernel.close()


def test_a_kernel_resumes_the_latest_and_a_held_session_in_one_line(project: Path, tmp_path: Path) -> None:
    early, newer = created_earlier_written_later(project)
    model = scripted(tmp_path, done("ok"))
    driver = nbformat.v4.new_notebook()
    driver.cells = [nbformat.v4.new_code_cell(source) for source in (
        "%load_ext larik_jupyter",
        f"%config LarikMagics.model = {model!r}",
        "%larik /resume --last",
        f"%larik /resume {newer.stem}",
        "%larik /resume 20200101-000000-abcdef",
    )]
    with Session.open(newer):
        NotebookClient(driver, kernel_name="python3", timeout=120, allow_errors=True,
                       resources={"metadata": {"path": str(project)}}).execute()

    def shown(cell: int) -> str:
        outputs = driver.cells[cell].outputs
        return "\n".join(o.get("data", {}).get("text/markdown", "") + o.get("text", "") + "\n".join(o.get("traceback", []))
                         for o in outputs)

    assert f"Resumed session `{early.stem}` (2 turns," in shown(2)
    held = shown(3)
    assert f"Session {newer.stem} is open in another kernel; continuing on a new branch" in held
    assert "Resumed session" not in held and "Traceback" not in held
    unknown = shown(4)
    assert "%larik /sessions" in unknown and "Traceback" not in unknown
