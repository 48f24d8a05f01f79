"""One meaning for a turn's diff, shared by the undo panel and the sidebar: what that turn did."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from larik_jupyter import Agent
from larik_jupyter.checkpoint.diffs import read_current
from larik_jupyter.errors import LarikError
from larik_jupyter.frontends.notebook.kernel import KernelSession
from larik_jupyter.frontends.notebook.widgets.undo import page_data, undo_data
from larik_jupyter.frontends.notebook.widgets.undo_model import UndoList
from larik_jupyter.frontends.server.turn_diffs import checkpoints
from tests.agent_helpers import done, scripted, tool


def test_an_older_turn_shows_its_own_change_in_both_views(project: Path, tmp_path: Path) -> None:
    (project / "a.txt").write_text("one\n")
    model = scripted(
        tmp_path,
        [tool("edit", path="a.txt", old_string="one", new_string="two")], done(),
        [tool("edit", path="a.txt", old_string="two", new_string="three")], done(),
    )
    agent = Agent(project, model=model, yes=True)
    agent.run("first")
    agent.run("second")
    newest, older = page_data(undo_data(agent))["turns"]
    assert "-one\n+two\n" in older["changes"][0]["diff"] and "three" not in older["changes"][0]["diff"]
    assert "-two\n+three\n" in newest["changes"][0]["diff"]
    sidebar = checkpoints(agent.session_id, project, str(project))
    assert [f.diff for t in sidebar.turns for f in t.files] == [
        newest["changes"][0]["diff"], older["changes"][0]["diff"]
    ]
    agent.close()


def test_read_current_never_follows_a_symlink_or_reads_a_fifo(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("x")
    (tmp_path / "link.txt").symlink_to(tmp_path / "real.txt")
    os.mkfifo(tmp_path / "pipe")
    assert read_current(tmp_path, "real.txt") == b"x"
    assert read_current(tmp_path, "gone.txt") is None
    with pytest.raises(LarikError, match="link.txt is not a regular file now"):
        read_current(tmp_path, "link.txt")
    with pytest.raises(LarikError, match="not a regular file"):
        read_current(tmp_path, "pipe")


def test_kernel_session_undo_data_without_an_agent(project: Path) -> None:
    # The panel says why it lists nothing (issue 39's undo panels), instead of an empty list.
    assert undo_data(KernelSession(project).agent) == UndoList(
        session=None, turns=[], empty="No session is open in this kernel."
    )
