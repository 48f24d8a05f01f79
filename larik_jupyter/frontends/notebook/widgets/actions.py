"""The messages between a widget and its page, declared once per widget: what the page sends is
one of the widget's `Action`s (a union of structs tagged by `type`, named by the widget's
`ACTIONS`), read once where the message arrives (`read_action`) and dispatched on its type; what
the kernel sends the page is a `PageNote`. A message that matches none of the widget's actions
is refused in one sentence, never a traceback."""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from larik_jupyter.api import LarikError

_log = logging.getLogger(__name__)


class Action(msgspec.Struct, tag_field="type", kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """A message a widget's page sends its kernel: `type` names the action, and the page sends
    exactly the fields the action declares."""


class Ping(Action, tag="ping"):
    """The page checking that its kernel still answers (`shared.js` `watchEnded`): no effect."""


class Resume(Action, tag="resume"):
    """Continue `session` in this kernel (the fork tree, the sessions browser)."""

    session: str


class PageNote(msgspec.Struct, tag_field="type", kw_only=True):
    """A message the kernel sends a widget's page."""


class ShowError(PageNote, tag="error"):
    """Why the last action failed (the page shows `message`)."""

    message: str


class Unreadable(LarikError):
    """A message from a widget's page that is none of the widget's actions."""


def read_action(content: Any, actions: Any, widget: str) -> Action:
    """`content` as one of `actions` (a union of `Action`s). Raises `Unreadable`, in one
    sentence naming `widget`, for a message that is none of them."""
    try:
        action: Action = msgspec.convert(content, actions)
    except msgspec.ValidationError as exc:
        _log.warning("%s: unreadable message from the page %r: %s", widget, content, exc)
        raise Unreadable(
            f"The {widget} sent a message this kernel cannot read ({exc}); run its command again to redraw it."
        ) from None
    return action


def note_data(note: PageNote) -> dict[str, Any]:
    """`note` as the widget's comm sends it."""
    data: dict[str, Any] = msgspec.to_builtins(note)
    return data
