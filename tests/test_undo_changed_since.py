"""Undo never silently loses the user's later edits: a file or cell changed since its turn is
named and asked about (restore anyway, or skip it) in the `Agent` API, `/undo`, `/rewind N
--files`, the undo panel and the CLI; and the CLI's undo queues the same `<system-note>`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from larik_jupyter import Agent
from larik_jupyter.api import RewindStopped
from larik_jupyter.frontends.notebook.widgets.undo import result_data
from tests.agent_helpers import done, scripted, tool
from tests.test_notebook_bridge import in_worker
from tests.test_notebook_cells_undo import _plain, agent_on_page, original
from tests.test_notebook_kernel_undo import client, run_cells

CLI = [sys.executable, "-m", "larik_jupyter"]


def two_file_turn(project: Path, tmp_path: Path, *more: list[dict[str, object]]) -> Agent:
    """Prompt 1 overwrites f.txt (was "v1") and creates g.txt."""
    (project / "f.txt").write_bytes(b"v1\n")
    model = scripted(
        tmp_path,
        [tool("write", path="f.txt", content="v2\n"), tool("write", path="g.txt", content="new\n")], done(),
        *more,
    )
    agent = Agent(project, model=model, yes=True)
    agent.run("change f and add g")
    return agent


def test_undo_names_a_file_changed_since_and_restores_nothing_unasked(project: Path, tmp_path: Path) -> None:
    agent = two_file_turn(project, tmp_path)
    (project / "f.txt").write_bytes(b"v2\nmy own line\n")  # the user's edit after the turn
    (result,) = agent.undo()
    assert result.changed == ["f.txt"] and not result.ok and result.restored == []
    assert (project / "f.txt").read_bytes() == b"v2\nmy own line\n"
    assert (project / "g.txt").read_bytes() == b"new\n"  # nothing of the turn was undone
    assert agent.loop.pending_note is None and len(agent.history.checkpoints()) == 1
    assert result_data(result)["changed"] == ["f.txt"]

    (forced,) = agent.undo(force=True)
    assert forced.ok and sorted(forced.restored) == ["f.txt", "g.txt"]
    assert (project / "f.txt").read_bytes() == b"v1\n" and not (project / "g.txt").exists()
    assert agent.history.checkpoints() == []
    agent.close()


def test_undo_skipping_changed_files_keeps_them_and_tells_the_model(project: Path, tmp_path: Path) -> None:
    agent = two_file_turn(project, tmp_path, done("next"))
    (project / "f.txt").write_bytes(b"mine\n")
    (result,) = agent.undo(skip_changed=True)
    assert result.ok and result.skipped == ["f.txt"] and result.restored == ["g.txt"]
    assert (project / "f.txt").read_bytes() == b"mine\n" and not (project / "g.txt").exists()
    assert agent.history.checkpoints() == []
    agent.run("go on")
    prompt = agent.loop.session.state.all[agent.loop.session.state.prompt_positions[-1]]
    note = prompt.content[0].text  # type: ignore[union-attr]
    assert note.startswith("<system-note>") and "back to their state before that turn: g.txt" in note
    assert "changed these files or cells again after prompt 1 and kept them as they are now (not reverted): f.txt" in note
    agent.close()


def test_a_file_back_as_before_or_deleted_since_loses_nothing_so_undo_does_not_ask(
    project: Path, tmp_path: Path
) -> None:
    agent = two_file_turn(project, tmp_path)
    (project / "f.txt").write_bytes(b"v1\n")  # the user put it back by hand
    (project / "g.txt").unlink()  # and deleted the new one
    (result,) = agent.undo()
    assert result.ok and result.changed == [] and (project / "f.txt").read_bytes() == b"v1\n"
    agent.close()


def test_rewind_with_files_stops_at_a_changed_file_until_forced(project: Path, tmp_path: Path) -> None:
    agent = two_file_turn(project, tmp_path)
    (project / "f.txt").write_bytes(b"mine\n")
    source = agent.session_id
    with pytest.raises(RewindStopped, match=r"prompt 1 was left as it is because f.txt changed since that turn; "
                                            r"no branch was made"):
        agent.rewind(1, files=True)
    assert agent.session_id == source and (project / "f.txt").read_bytes() == b"mine\n"
    agent.rewind(1, files=True, force=True)
    assert agent.session_id != source and (project / "f.txt").read_bytes() == b"v1\n"
    agent.close()


def test_cells_the_user_edited_since_in_the_open_notebook_are_asked_about(tmp_path: Path) -> None:
    agent, page, _ = agent_on_page(tmp_path)
    calc = next(c for c in page.cells if c["id"] == "calc")
    calc["source"] += "\nw = 'typed by the user'"
    typed = [dict(c) for c in page.cells]
    (result,) = in_worker(agent.undo)
    assert result.changed == ["nb.ipynb#calc"] and page.cells == typed and page.restores == 0
    (kept,) = in_worker(lambda: agent.undo(skip_changed=True))
    assert kept.ok and kept.skipped == ["nb.ipynb#calc"]
    want = [_plain(c) for c in original(tmp_path).cells]
    want[1] = calc  # the inserted cell is gone, `ran` is back, `calc` stays as the user typed it
    assert sorted(page.cells, key=lambda c: c["id"]) == sorted(want, key=lambda c: c["id"])


def test_cells_edited_since_in_a_closed_notebooks_file_are_asked_about(tmp_path: Path) -> None:
    agent, page, _ = agent_on_page(tmp_path)
    saved = nbformat.v4.new_notebook()  # saved with the agent's edits and one of the user's
    saved.cells = [nbformat.from_dict(c) for c in page.cells]
    saved.cells[0].source = "import os, sys"
    nbformat.write(saved, tmp_path / "nb.ipynb")
    page.open = False
    written = (tmp_path / "nb.ipynb").read_bytes()
    (result,) = in_worker(agent.undo)
    assert result.changed == [f"nb.ipynb#{page.cells[0]['id']}"]
    assert (tmp_path / "nb.ipynb").read_bytes() == written
    assert in_worker(lambda: agent.undo(force=True)).ok
    assert [c.id for c in nbformat.read(tmp_path / "nb.ipynb", as_version=4).cells] == ["title", "calc", "ran", "tail"]


def test_the_cli_refuses_without_force_and_its_undo_reaches_the_next_prompt(project: Path, tmp_path: Path) -> None:
    agent = two_file_turn(project, tmp_path)
    session_id = agent.session_id
    sessions = sorted(agent.session_path.parent.iterdir())
    held = subprocess.run([*CLI, "undo", session_id], capture_output=True, text=True)
    assert held.returncode == 2 and "is open in another process" in held.stderr and "Traceback" not in held.stderr
    # Refused, not branched (as a turn-running agent on a held session would): nothing new on disk.
    assert sorted(agent.session_path.parent.iterdir()) == sessions
    assert (project / "f.txt").read_bytes() == b"v2\n"
    agent.close()
    (project / "f.txt").write_bytes(b"mine\n")
    refused = subprocess.run([*CLI, "undo", session_id], capture_output=True, text=True)
    assert refused.returncode == 1
    assert refused.stdout.splitlines()[1:4] == [
        "Prompt 1 was not undone: these files changed since that turn, and undoing it would "
        "overwrite those changes:",
        "- changed since: f.txt",
        f"Run larik-jupyter undo {session_id} --force to restore them anyway (the later changes are "
        f"lost), or larik-jupyter undo {session_id} --skip-changed to keep them as they are and undo the rest.",
    ]
    assert refused.stdout.startswith(f"Session {session_id} in {project}:")
    assert (project / "f.txt").read_bytes() == b"mine\n"
    forced = subprocess.run([*CLI, "undo", session_id, "--force"], capture_output=True, text=True, check=True)
    assert "- restored f.txt" in forced.stdout and (project / "f.txt").read_bytes() == b"v1\n"
    assert not (project / "g.txt").exists()

    resumed = Agent(project, session=session_id, model=scripted(tmp_path, done("ok")))
    resumed.run("what changed?")
    state = resumed.loop.session.state
    note = state.all[state.prompt_positions[-1]].content[0].text  # type: ignore[union-attr]
    assert note.startswith("<system-note>The user reverted the file changes of prompt 1;")
    assert "f.txt" in note and "g.txt" in note
    resumed.close()


@pytest.mark.timeout(240)
def test_undo_in_a_kernel_shows_the_changed_file_and_force_restores_it(project: Path, tmp_path: Path) -> None:
    (project / "f.txt").write_text("v1\n")
    model = scripted(tmp_path, [tool("write", path="f.txt", content="v2\n")], done())
    nbc = client(project, [
        "%load_ext larik_jupyter", f"%larik --model {model} --yes change f",
        "open('f.txt', 'a').write('my line\\n')", "%larik /undo", "%larik /undo --force",
    ])
    with nbc.setup_kernel():
        texts = run_cells(nbc, stop=4)
        assert (project / "f.txt").read_text() == "v2\nmy line\n"
        texts = run_cells(nbc, start=4)
    asked = texts[3]
    assert "Prompt 1 was not undone: these files changed since that turn" in asked
    assert "changed since: f.txt" in asked and "%larik /undo --force" in asked and "Traceback" not in asked
    assert "restored f.txt" in texts[4] and (project / "f.txt").read_text() == "v1\n"


def test_the_undo_panel_asks_then_restores_anyway_or_skips(tmp_path: Path) -> None:
    from larik_jupyter.frontends.notebook.widgets.undo import UndoPanel
    from tests.test_widget_undo import two_turns
    from tests.widget_helpers import click

    shell, magics = two_turns(tmp_path / "p", tmp_path)
    root = tmp_path / "p"
    (root / "new.py").write_text("print('mine')\n")
    panel = UndoPanel(magics.kernel)
    click(panel, type="undo")
    assert panel.result["changed"] == ["new.py"] and not panel.result["ok"]
    assert panel.retry == {"type": "undo"} and panel.status == (
        "Prompt 2 was not undone: new.py changed since; restore them anyway or skip them."
    )
    assert "changed since: new.py" in panel.static_text()
    assert (root / "new.py").read_text() == "print('mine')\n" and (root / "notes.txt").read_text() == "ALPHA\nBETA\n"
    click(panel, type="undo", skip_changed=True)
    assert panel.result["skipped"] == ["new.py"] and panel.result["restored"] == ["notes.txt"]
    assert (root / "new.py").read_text() == "print('mine')\n" and (root / "notes.txt").read_text() == "alpha\nBETA\n"
    assert "kept as you changed it since: new.py" in panel.static_text()


def test_the_fork_trees_rewind_with_files_asks_about_changed_files_then_skips_them(
    project: Path, tmp_path: Path
) -> None:
    from larik_jupyter.frontends.notebook.widgets.tree import ForkTreeWidget
    from tests.widget_helpers import click, larik, shell_with_magics

    model = scripted(tmp_path, [tool("write", path="a.txt", content="one\n"),
                                tool("write", path="b.txt", content="b\n")], done(), done("second"))  # fmt: skip
    shell, magics = shell_with_magics(project, model)
    larik(shell, "first")
    larik(shell, "second")
    (project / "a.txt").write_text("mine\n")
    source = magics.agent.session_id
    tree = ForkTreeWidget(magics.kernel)
    click(tree, type="plan_rewind", session=source, prompt=1)
    click(tree, type="rewind", session=source, prompt=1, files=True, turns=tree.confirm["turns"])
    assert tree.confirm["changed"] == ["a.txt"] and magics.agent.session_id == source
    assert (project / "a.txt").read_text() == "mine\n" and (project / "b.txt").exists()
    click(tree, type="rewind", session=source, prompt=1, files=True, turns=tree.confirm["turns"], skip_changed=True)
    assert tree.error == "" and tree.confirm == {} and magics.agent.session_id != source
    assert (project / "a.txt").read_text() == "mine\n" and not (project / "b.txt").exists()
