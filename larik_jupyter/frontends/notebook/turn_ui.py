"""Everything one `%larik` turn shows in its cell: the streaming transcript, the approval cards and
the Stop control, and the approver that waits for a click."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
from IPython.core.formatters import format_display_data
from IPython.display import DisplayHandle, display

from larik_jupyter.agent import events as ae
from larik_jupyter.api import Approver, PermissionAnswer, PermissionRequest
from larik_jupyter.frontends.notebook.pump import MainThreadPump
from larik_jupyter.frontends.notebook.view import TranscriptView
from larik_jupyter.frontends.notebook.widgets import SilentWhenStatic
from larik_jupyter.frontends.notebook.widgets.approval import ApprovalWidget
from larik_jupyter.frontends.notebook.widgets.controls import TurnControls

if TYPE_CHECKING:
    from larik_jupyter.frontends.notebook.reattach import MirroredCell

# How long the first approval waits for a browser to show the controls before deciding
# that nobody is watching (nbclient, `jupyter execute`).
FRONTEND_GRACE_SECONDS = 3.0


class ApprovalArea(SilentWhenStatic, widgets.VBox):
    """Where a turn's approval cards appear (their answers also show in the tool rows)."""


class TurnUI:
    """Everything one `%larik` turn shows: transcript, approval area and Stop button."""

    reading_input = False  # approvals are buttons here, never a blocking input()

    def __init__(
        self, pump: MainThreadPump, on_stop: Callable[[], None], *, interactive: bool | None, headless: bool = False
    ) -> None:
        self.pump = pump
        # Run headless (nbconvert --execute), nothing can click a button or render a widget:
        # the approval area and Stop would only be blank outputs, and approvals are refused.
        self.headless = headless
        self.view = TranscriptView()
        self.asks = ApprovalArea()
        self.controls = TurnControls(on_stop=on_stop)
        self.interactive = False if headless else interactive
        self.approvals: list[ApprovalWidget] = []
        self.mirror: MirroredCell | None = None
        # Where no widget can render but the notebook's pages answer through the server
        # (jupyter-server-documents, `page_approvals.py`): asks go there instead of a card.
        self.page: Approver | None = None
        self._handles: list[DisplayHandle] = []
        self._gone: set[widgets.Widget] = set()  # taken out of the cell when the turn ended

    def show(self) -> None:
        self.view.show()
        if not self.headless:
            self._handles = [display(w, display_id=True) for w in (self.asks, self.controls)]

    def outputs(self) -> list[dict[str, Any]]:
        """What `show` put in the cell, as it is now, as nbformat outputs."""
        shown: list[tuple[dict[str, Any], dict[str, Any]]] = [(self.view.bundle(), {})]
        shown += [({}, {}) if w in self._gone else format_display_data(w) for w in (self.asks, self.controls)]
        return [{"output_type": "display_data", "data": data, "metadata": meta} for data, meta in shown]

    def _take_out(self) -> None:
        """Once the turn ended, the Stop control and the approval area leave the cell (and the
        saved notebook): no blank widget left behind, none that a kernel restart would mark as
        disconnected. A card left unanswered is said in the transcript, above its footer."""
        if not self._handles:
            return  # headless: nothing was shown
        for handle, widget in zip(self._handles, (self.asks, self.controls), strict=True):
            handle.update({}, raw=True)
            self._gone.add(widget)

    def follow(self, mirror: MirroredCell) -> None:
        """Keep `mirror` (the cell in pages that connect mid-turn) up to date."""
        self.mirror = mirror
        self.view.on_update = mirror.changed

    def listener(self, event: ae.AgentEvent) -> None:
        """Subscribed to the agent on its worker thread; hands every event to the cell's thread,
        but a running call's output, which comes while that thread runs the call's code."""
        if isinstance(event, ae.ToolOutput):
            self.view.handle(event)
        else:
            self.pump.post(lambda: self.view.handle(event))

    def _remove(self, cards: list[ApprovalWidget]) -> None:
        self.asks.children = tuple(c for c in self.asks.children if c not in cards)

    def finish(self) -> None:
        """The turn ended: an unanswered card's buttons stop answering, and the card goes with
        the approval area (the transcript says the call was cancelled, as the turn's end)."""
        for card in self.approvals:
            card.cancel()
        self._remove(self.approvals)
        self.controls.running = False
        self._take_out()
        self.view.flush(force=True)
        if self.mirror is not None:
            self.mirror.changed()  # pages that joined mid-turn: the cell without its widgets
            self.mirror.end()

    async def approver(self, request: PermissionRequest) -> PermissionAnswer | None:
        """Show an approval card and wait for a click; None when no browser is watching."""
        if self.page is not None:
            return await self.page(request)
        if not await self._someone_watching():
            return None
        loop = asyncio.get_running_loop()
        future: asyncio.Future[PermissionAnswer] = loop.create_future()

        cards: list[ApprovalWidget] = []

        def answered(answer: PermissionAnswer) -> None:
            def resolve() -> None:
                if not future.done():
                    future.set_result(answer)

            loop.call_soon_threadsafe(resolve)
            # The decision shows on the call's row, in order: the card goes.
            self.pump.post(lambda: self._remove(cards))

        def show() -> None:
            card = ApprovalWidget(request, answered)
            cards.append(card)
            self.approvals.append(card)
            self.asks.children = (*self.asks.children, card)

        self.pump.post(show)
        return await future

    async def _someone_watching(self) -> bool:
        if self.interactive is not None:
            return self.interactive
        deadline = time.monotonic() + FRONTEND_GRACE_SECONDS
        while not self.controls.rendered and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        self.interactive = self.controls.rendered
        return self.interactive
