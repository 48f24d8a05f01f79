"""The turn's Stop button; its rendering also tells the kernel a live front end is watching."""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

import anywidget
import traitlets

from larik_jupyter.api import LarikError
from larik_jupyter.frontends.notebook.widgets import SilentWhenStatic
from larik_jupyter.frontends.notebook.widgets.actions import Action, read_action


class Stop(Action, tag="stop"):
    """The Stop button was clicked."""


class TurnControls(SilentWhenStatic, anywidget.AnyWidget):
    """Stop button for a running turn.

    `rendered` is set by the browser when the view appears: headless runs (nbclient,
    `jupyter execute`) never set it, so the agent knows nobody can answer an approval.
    """

    _esm = pathlib.Path(__file__).parent / "controls.js"
    running = traitlets.Bool(True, help="whether the turn is still running").tag(sync=True)
    rendered = traitlets.Bool(False, help="set by the front end once the view is shown").tag(sync=True)

    def __init__(self, on_stop: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._on_stop = on_stop
        self.on_msg(self._on_custom_msg)

    def _on_custom_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        try:
            read_action(content, Stop, "Stop button")
        except LarikError:
            return  # logged; the button has nowhere to show an error
        self.stop()

    def stop(self) -> None:
        """What the Stop button does: interrupt the running turn."""
        if self.running:
            self._on_stop()
