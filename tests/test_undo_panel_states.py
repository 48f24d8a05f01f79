"""The undo panel tells the truth when the session moves on without it (issue 39, point 9): an
earlier panel keeps what it showed and says it is out of date; a variable back as it was is not
listed as changed; nothing left to undo is said so."""

from __future__ import annotations

from pathlib import Path

from larik_jupyter.frontends.notebook.widgets.undo import UndoPanel
from tests.agent_helpers import scripted, text, tool
from tests.widget_helpers import click, larik, shell_with_magics


def test_an_earlier_panel_keeps_what_it_showed_and_says_it_is_out_of_date(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    model = scripted(
        tmp_path,
        [tool("write", path="a.txt", content="a\n")], [text("Wrote a.")],
        [tool("write", path="b.txt", content="b\n")], [text("Wrote b.")],
    )
    shell, magics = shell_with_magics(root, model)
    larik(shell, "write a")
    earlier = UndoPanel(magics.kernel)
    assert [t["turn"] for t in earlier.panel["turns"]] == [1] and earlier.stale == ""
    larik(shell, "write b")  # every shown panel is refreshed after a turn
    assert [t["turn"] for t in earlier.panel["turns"]] == [1]  # what it showed, not turn 2
    assert earlier.stale == "Out of date: since this list was shown, 1 turn added."
    assert "Out of date: since this list was shown, 1 turn added." in earlier.static_text()
    click(earlier, type="undo")  # its Undo would act on a turn it does not show: refused
    assert "Refresh the list before undoing" in earlier.error
    assert (root / "b.txt").exists()

    click(earlier, type="reload")
    assert [t["turn"] for t in earlier.panel["turns"]] == [2, 1] and earlier.stale == ""
    other = UndoPanel(magics.kernel)
    click(other, type="undo")
    assert not (root / "b.txt").exists() and [t["turn"] for t in other.panel["turns"]] == [1]
    assert other.stale == ""  # the panel that acted follows its own undo
    assert earlier.stale == "Out of date: since this list was shown, 1 turn undone."
    assert [t["turn"] for t in earlier.panel["turns"]] == [2, 1]


def test_a_variable_changed_back_is_not_listed_as_a_change(tmp_path: Path) -> None:
    root = tmp_path / "v"
    root.mkdir()
    model = scripted(tmp_path, [tool("python", code="data[0] = 9")], [text("Changed.")])
    shell, magics = shell_with_magics(root, model)
    shell.user_ns["data"] = [1, 2, 3]
    larik(shell, "change data")
    panel = UndoPanel(magics.kernel)

    def line() -> str:
        panel.reload()
        [turn] = panel.panel["turns"]
        [variable] = turn["variables"]
        assert variable["text"] in panel.static_text()
        return str(variable["text"])

    assert line() == "data: list len 3, changed in place"  # the transcript's words, no `len 3 → len 3`
    shell.user_ns["data"][0] = 1  # the user puts it back
    assert line() == "data: list, len 3, as it was before this turn (changed back since), nothing to undo"
    shell.user_ns["data"][0] = 7
    assert line() == "data: list len 3, changed in place"


def test_when_all_is_undone_the_panel_says_nothing_is_left_to_undo(tmp_path: Path) -> None:
    root = tmp_path / "u"
    root.mkdir()
    model = scripted(tmp_path, [tool("write", path="a.txt", content="a\n")], [text("Wrote a.")])
    shell, magics = shell_with_magics(root, model)
    larik(shell, "write a")
    panel = UndoPanel(magics.kernel)
    click(panel, type="undo")
    session = magics.agent.session_id
    assert panel.panel["turns"] == []
    assert panel.panel["empty"] == f"Nothing left to undo in session {session}: no turn of it has changes to files, cells or kernel variables that are not undone already."
    assert panel.static_text().endswith(f"Nothing left to undo in session {session}: no turn of it has changes to files, cells or kernel variables that are not undone already.")
    assert "changed files" not in panel.static_text() + panel.static_html()
    assert "Undone: prompt 1 (" in panel.static_text() and "Undone: prompt 1 (" in panel.static_html()
