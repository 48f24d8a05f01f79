"""The `/check` report (`%larik /check`): the notebook run in a scratch kernel, what failed,
what leans on hidden state, what ran out of order and which values differ; each problem about
a cell links to it in the open notebook (a `focus` request over the bridge)."""

from __future__ import annotations

import pathlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import traitlets

from larik_jupyter.api import CheckReport
from larik_jupyter.bridge_protocol import Focus
from larik_jupyter.frontends.notebook.widgets import esm
from larik_jupyter.frontends.notebook.widgets.actions import Action, Ping
from larik_jupyter.frontends.notebook.widgets.session_widget import SessionWidget

if TYPE_CHECKING:
    from larik_jupyter.frontends.notebook.kernel import KernelSession

_HERE = pathlib.Path(__file__).parent


class FocusCell(Action, tag="focus"):
    """Show cell `cell_id` in the open notebook (a problem the user clicked)."""

    cell_id: str


class CheckWidget(SessionWidget):
    """One check's report. Parameters: `kernel`, `report`.

    The front end sends `focus` (`FocusCell`) to show a cell; `focus()` does the same."""

    ACTIONS = FocusCell | Ping
    NAME = "check report"

    _esm = esm("check")
    _css = _HERE / "widgets.css"

    opening = traitlets.Unicode(help="what did not hold (the network allowed, no OS confinement), or ''").tag(sync=True)
    headline = traitlets.Unicode(help="the report's summary sentence").tag(sync=True)
    footer = traitlets.Unicode(help="the report's last line: the confinement the cells ran under").tag(sync=True)
    sections: traitlets.List[dict[str, Any]] = traitlets.List(
        help="each heading with its items: {text, cell_id (or null)}"
    ).tag(sync=True)

    def __init__(self, kernel: KernelSession, report: CheckReport, **kwargs: Any) -> None:
        self.report = report
        super().__init__(kernel, **kwargs)

    def act(self, action: Action) -> None:
        if isinstance(action, FocusCell):
            self.focus(action.cell_id)

    def refresh(self, memo: dict[tuple[Any, ...], Any] | None = None) -> None:
        self.opening = self.report.opening
        self.headline = self.report.headline()
        self.footer = self.report.footer()
        self.sections = [
            {"heading": heading, "items": [{"text": text, "cell_id": cell.id if cell else None} for text, cell in items]}
            for heading, items in self.report.sections()
        ]

    def focus(self, cell_id: str) -> None:
        """Select and scroll to `cell_id` in the notebook a browser shows (nothing without one)."""
        bridge = self.kernel.host.bridge if self.kernel.host is not None else None
        if bridge is None:
            self.status = "This is not an open notebook, so there is no cell to go to."
            return
        bridge.post(Path(self.report.path), Focus(cell_id=cell_id))
        self.status = f"Showing cell {cell_id}."

    def static_html(self) -> str:
        return self.report.html()

    def static_text(self) -> str:
        return self.report.text()
