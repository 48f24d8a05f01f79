"""Each widget's messages from its page are declared once (a union of `Action`s) and read once
where they arrive: the messages each widget's JS sends decode to its declared actions, and a
message that is none of them is refused in one sentence in the widget, never a traceback."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args

import msgspec
import pytest

from larik_jupyter.frontends.notebook.widgets import actions
from larik_jupyter.frontends.notebook.widgets.actions import Action, Ping, Resume, read_action
from larik_jupyter.frontends.notebook.widgets.check import CheckWidget, FocusCell
from larik_jupyter.frontends.notebook.widgets.controls import Stop, TurnControls
from larik_jupyter.frontends.notebook.widgets.sessions import Delete, Export, Fork, SessionsBrowser
from larik_jupyter.frontends.notebook.widgets.tree import ForkTreeWidget
from larik_jupyter.frontends.notebook.widgets.tree_actions import (
    AsNotebook,
    CancelRewind,
    Compare,
    ForkAt,
    NoCells,
    PlanRewind,
    Rewind,
)
from larik_jupyter.frontends.notebook.widgets.undo import Reload, Undo, UndoPanel, UndoTo
from tests.widget_helpers import click, shell_with_magics, talkative

WIDGETS = Path(actions.__file__).parent
# Each widget's module and the actions it may send (the shared module's `ping` goes to each).
VIEWS: dict[str, Any] = {
    "check.js": CheckWidget.ACTIONS,
    "controls.js": Stop,
    "sessions.js": SessionsBrowser.ACTIONS,
    "tree.js": ForkTreeWidget.ACTIONS,
    "undo.js": UndoPanel.ACTIONS,
    "shared.js": Ping,
}


def _declared(union: Any) -> dict[str, set[str]]:
    """Each action's `type` and its fields."""
    kinds = get_args(union) or (union,)
    return {str(kind.__struct_config__.tag): set(kind.__struct_fields__) for kind in kinds}


def _sent(js: str) -> list[tuple[str, set[str]]]:
    """The messages a module sends, written out: `send("type", {fields})` and `{ type: "…", fields }`."""
    found = [(kind, set(re.findall(r"(\w+):", body))) for kind, body in re.findall(r'send\("(\w+)", \{([^}]*)\}\)', js)]
    found += [
        (kind, set(re.findall(r"(\w+):", body)))
        for kind, body in re.findall(r'\{ type: "(\w+)"((?:, \w+: [\w.]+)*) \}', js)
    ]
    return found


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_every_message_a_widgets_page_sends_is_one_of_its_declared_actions(name: str) -> None:
    declared = _declared(VIEWS[name])
    sent = _sent((WIDGETS / name).read_text(encoding="utf-8"))
    assert sent, f"{name} sends nothing this test can read"
    for kind, fields in sent:
        assert kind in declared, f"{name} sends {kind!r}, which its widget does not declare"
        assert fields <= declared[kind], f"{name}'s {kind!r} sends {fields - declared[kind]} undeclared"


@pytest.mark.parametrize(
    ("union", "message", "action"),
    [
        (CheckWidget.ACTIONS, {"type": "focus", "cell_id": "c1"}, FocusCell(cell_id="c1")),
        (CheckWidget.ACTIONS, {"type": "ping"}, Ping()),
        (Stop, {"type": "stop"}, Stop()),
        (SessionsBrowser.ACTIONS, {"type": "resume", "session": "s1"}, Resume(session="s1")),
        (SessionsBrowser.ACTIONS, {"type": "fork", "session": "s1"}, Fork(session="s1")),
        (SessionsBrowser.ACTIONS, {"type": "export", "session": "s1"}, Export(session="s1")),
        (SessionsBrowser.ACTIONS, {"type": "delete", "session": "s1", "confirm": True}, Delete(session="s1", confirm=True)),
        (UndoPanel.ACTIONS, {"type": "undo"}, Undo()),
        (UndoPanel.ACTIONS, {"type": "undo", "force": True}, Undo(force=True)),
        (UndoPanel.ACTIONS, {"type": "undo_to", "prompt": 2, "skip_changed": True}, UndoTo(prompt=2, skip_changed=True)),
        (UndoPanel.ACTIONS, {"type": "reload"}, Reload()),
        (ForkTreeWidget.ACTIONS, {"type": "rewind", "session": "s1", "prompt": 2}, Rewind(session="s1", prompt=2)),
        (
            ForkTreeWidget.ACTIONS,
            {"type": "rewind", "session": "s1", "prompt": 2, "files": True, "turns": [3, 2], "force": True},
            Rewind(session="s1", prompt=2, files=True, turns=[3, 2], force=True),
        ),
        (ForkTreeWidget.ACTIONS, {"type": "plan_rewind", "session": "s1", "prompt": 2}, PlanRewind(session="s1", prompt=2)),
        (ForkTreeWidget.ACTIONS, {"type": "cancel_rewind"}, CancelRewind()),
        (ForkTreeWidget.ACTIONS, {"type": "fork", "session": "s1", "prompt": 2}, ForkAt(session="s1", prompt=2)),
        (ForkTreeWidget.ACTIONS, {"type": "resume", "session": "s1"}, Resume(session="s1")),
        (ForkTreeWidget.ACTIONS, {"type": "notebook", "session": "s1"}, AsNotebook(session="s1")),
        (ForkTreeWidget.ACTIONS, {"type": "compare", "session": "s1", "other": "s2"}, Compare(session="s1", other="s2")),
        (ForkTreeWidget.ACTIONS, {"type": "no_cells", "session": "s1", "prompt": 2}, NoCells(session="s1", prompt=2)),
    ],
)
def test_each_message_decodes_to_its_action(union: Any, message: dict[str, Any], action: Action) -> None:
    assert read_action(message, union, "widget") == action
    # What the kernel hands its page as an action (`retry`, a turn's `undo`) is the message again.
    assert read_action(msgspec.to_builtins(action), union, "widget") == action


@pytest.mark.parametrize(
    "message",
    [
        {"type": "resume"},  # a field missing
        {"type": "resume", "session": 7},  # of the wrong type
        {"type": "resume", "session": "s1", "prompt": 2},  # a field the action does not declare
        {"type": "explode"},  # no such action
        "resume",  # not an object
    ],
)
def test_a_malformed_message_is_refused_in_one_sentence_in_the_widget(
    message: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    _, magics = shell_with_magics(project, talkative(tmp_path))
    browser = SessionsBrowser(magics.kernel)
    sent: list[Any] = []
    browser.send = sent.append  # type: ignore[method-assign]  # the comm to the page
    click_raw(browser, message)
    assert browser.error.startswith("The sessions browser sent a message this kernel cannot read (")
    assert browser.error.endswith("; run its command again to redraw it.") and browser.error.count(". ") == 0
    assert sent == [{"type": "error", "message": browser.error}]
    assert "unreadable message from the page" in caplog.text
    # The next good message clears it.
    click(browser, type="ping")
    click(browser, type="export", session="nope")
    assert "nope" in browser.error and "cannot read" not in browser.error


def click_raw(widget: Any, content: Any) -> None:
    """A comm message whose content is `content` as it came, object or not."""
    widget._handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})


def test_a_malformed_stop_is_ignored_with_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []
    controls = TurnControls(on_stop=lambda: calls.append(1))
    controls._on_custom_msg(controls, {"type": "stop", "now": True}, [])
    assert calls == [] and "Stop button: unreadable message from the page" in caplog.text
    controls._on_custom_msg(controls, {"type": "stop"}, [])
    assert calls == [1]
