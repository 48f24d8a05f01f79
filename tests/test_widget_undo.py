"""The undo panel: turns with diffs newest first, and its undo doing exactly what `/undo` does."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from IPython.utils.capture import capture_output

from larik_jupyter import paths
from larik_jupyter.frontends.notebook.widgets.session_widget import shown_widgets
from larik_jupyter.frontends.notebook.widgets.tree import ForkTreeWidget
from larik_jupyter.frontends.notebook.widgets.undo import UndoPanel, undo_data
from larik_jupyter.frontends.notebook.widgets.undo_model import UndoList
from tests.agent_helpers import scripted, text, tool
from tests.widget_helpers import click, larik, shell_with_magics


def two_turns(root: Path, tmp_path: Path) -> tuple[Any, Any]:
    """Turn 1 edits notes.txt; turn 2 edits it again and creates new.py."""
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    model = scripted(
        tmp_path,
        [tool("edit", path="notes.txt", old_string="beta", new_string="BETA")],
        [text("Edited.")],
        [tool("edit", path="notes.txt", old_string="alpha", new_string="ALPHA")],
        [tool("write", path="new.py", content="print('hi')\n")],
        [text("Done.")],
    )
    shell, magics = shell_with_magics(root, model)
    larik(shell, "shout beta")
    larik(shell, "shout alpha and add new.py")
    return shell, magics


def test_panel_lists_turns_newest_first_with_diffs_and_one_undo_button(tmp_path: Path) -> None:
    shell, magics = two_turns(tmp_path / "p", tmp_path)
    panel = UndoPanel(magics.kernel)
    newest, older = panel.panel["turns"]
    assert (newest["turn"], older["turn"]) == (2, 1)
    assert [f["path"] for f in newest["changes"]] == ["notes.txt", "new.py"]
    notes, new = newest["changes"]
    assert "-alpha\n" in notes["diff"] and "+ALPHA\n" in notes["diff"] and "BETA" in notes["diff"]
    assert new["diff"].startswith("--- /dev/null\n+++ b/new.py\n")
    assert newest["undoable"] and newest["why"] is None
    assert not older["undoable"] and older["why"] == "Undo goes newest first: undo prompt 2 before this one."
    assert "notes.txt" in panel.static_html()


def test_undo_button_restores_files_like_the_magic_and_panels_follow(tmp_path: Path) -> None:
    shell, magics = two_turns(tmp_path / "widget", tmp_path)
    panel = UndoPanel(magics.kernel)
    tree = ForkTreeWidget(magics.kernel)
    click(panel, type="undo")
    root = tmp_path / "widget"
    assert (root / "notes.txt").read_text() == "alpha\nBETA\n" and not (root / "new.py").exists()
    assert panel.result == {
        "turn": 2, "label": "prompt 2", "restored": ["new.py", "notes.txt"], "refused": [],
        "removed_dirs": [], "kept_dirs": [], "ok": True,
    }
    assert [t["turn"] for t in panel.panel["turns"]] == [1]
    assert panel.panel["turns"][0]["undoable"] and panel.status == "Undid prompt 2."
    assert tree.tree["current"] == magics.agent.session_id

    twin_shell, twin = two_turns(tmp_path / "magic", tmp_path)
    larik(twin_shell, "/undo")
    twin_root = tmp_path / "magic"
    assert sorted(os.listdir(root)) == sorted(os.listdir(twin_root))
    assert (twin_root / "notes.txt").read_bytes() == (root / "notes.txt").read_bytes()
    for m in (magics, twin):
        m.agent.loop.checkpoints.settle()
        assert sorted(os.listdir(paths.checkpoints_dir(m.agent.session_id))) == ["1"]
    # The magic shows the panel too, alive and refreshed with the session.
    shown = [w for w in shown_widgets() if isinstance(w, UndoPanel) and w.kernel is twin.kernel]
    assert shown and shown[-1].result["turn"] == 2


def test_a_refused_file_is_reported_and_the_turn_stays(tmp_path: Path) -> None:
    shell, magics = two_turns(tmp_path / "p", tmp_path)
    root = tmp_path / "p"
    (root / "notes.txt").unlink()
    (root / "notes.txt").symlink_to(root / "elsewhere.txt")
    panel = UndoPanel(magics.kernel)
    click(panel, type="undo")
    assert panel.result["ok"] is False
    assert panel.result["restored"] == ["new.py"]
    (refused,) = panel.result["refused"]
    assert refused["path"] == "notes.txt" and refused["reason"]
    assert [t["turn"] for t in panel.panel["turns"]] == [2, 1]  # kept so undo can be retried
    assert "partly undone" in panel.status


def test_checkpoints_shows_the_panel_and_nothing_to_undo_is_one_sentence(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    shell, magics = shell_with_magics(root, scripted(tmp_path, [text("hi")]))
    larik(shell, "just talk")
    larik(shell, "/checkpoints")
    (panel,) = [w for w in shown_widgets() if isinstance(w, UndoPanel) and w.kernel is magics.kernel]
    session = magics.agent.session_id
    assert panel.panel == {"session": session, "turns": [], "empty": f"Nothing left to undo in session {session}: no turn of it has changes to files, cells or kernel variables that are not undone already.", "undone": [], "undone_text": ""}
    click(panel, type="undo")
    assert panel.error.startswith(f"Nothing left to undo in session {session}: no turn of it has changes")
    assert undo_data(None) == UndoList(session=None, turns=[], empty="No session is open in this kernel.")


def test_panel_lists_variable_changes_and_undoes_them(tmp_path: Path) -> None:
    root = tmp_path / "vars"
    root.mkdir()
    model = scripted(
        tmp_path,
        [tool("python", code="data.append(4)\nx = 5")], [text("Changed.")],
        [tool("write", path="a.txt", content="a\n")], [text("Wrote.")],
    )
    shell, magics = shell_with_magics(root, model)
    shell.user_ns["data"] = [1, 2, 3]
    larik(shell, "change data")
    larik(shell, "write a")
    panel = UndoPanel(magics.kernel)
    newest, older = panel.panel["turns"]
    assert (newest["prompt"], older["prompt"]) == (2, 1) and newest["variables"] == []
    assert [(v["name"], v["before"], v["after"]) for v in older["variables"]] == [
        ("data", "list, len 3", "list, len 4"),
        ("x", "(did not exist)", "int"),
    ]
    # The line shown under the python call, from the transcript.
    assert [v["change"] for v in older["variables"]] == [
        "data: list len 3 → len 4, changed in place", "x: created int"
    ]
    assert "variable <code>data</code>" in panel.static_html()
    click(panel, type="undo_to", prompt=1)
    assert [r["turn"] for r in panel.results] == [2, 1]
    assert panel.results[-1]["variables"] == "restored variables: data; removed: x"
    assert shell.user_ns["data"] == [1, 2, 3] and "x" not in shell.user_ns
    assert not (root / "a.txt").exists() and panel.panel["turns"] == []
    assert panel.status == "Undid prompt 2, prompt 1."


def test_undo_to_in_a_cell_stops_at_a_refusal_and_rewind_with_files_makes_no_branch(tmp_path: Path) -> None:
    import pytest
    from IPython.core.error import UsageError
    from IPython.utils.capture import capture_output

    shell, magics = two_turns(tmp_path / "p", tmp_path)
    root = tmp_path / "p"
    (root / "new.py").unlink()
    (root / "new.py").symlink_to(root / "elsewhere.py")
    source = magics.agent.session_id
    with pytest.raises(UsageError, match="prompt 2 could not restore new.py .*no branch was made"):
        larik(shell, "/rewind 1 --files")
    assert magics.agent.session_id == source
    with capture_output() as shown:
        larik(shell, "/undo --to 1")
    text = "".join(out.data.get("text/markdown") or out.data.get("text/plain", "") for out in shown.outputs)
    assert "Prompt 2 was only partly undone:" in text and "- not restored new.py" in text
    assert "Stopped at prompt 2: it was not fully undone" in text
    assert (root / "notes.txt").read_text() == "alpha\nBETA\n"  # turn 1's change is still there


def test_undo_says_what_it_did_once(tmp_path: Path) -> None:
    shell, magics = two_turns(tmp_path / "once", tmp_path)
    with capture_output() as captured:
        larik(shell, "/undo")
    (output,) = captured.outputs  # one output: the panel, whose static renderings say it
    plain = output.data["text/plain"]
    assert plain.count("Undid prompt 2.") == 1 and "- restored notes.txt" in plain
    assert output.data["text/html"].count("Undid prompt 2.") == 1
