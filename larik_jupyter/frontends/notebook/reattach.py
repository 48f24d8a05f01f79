"""A running turn shown again in a page that connects mid-turn (a reload, a second tab).

Such a page shows the cell's outputs as they were last saved, and the display updates of the
running cell no longer reach it: they go to the output area of the page that ran the cell. So
the kernel sends that page the cell's outputs as they are now (`show_outputs` over the bridge)
and again whenever the transcript changes, until the turn ends with its final state. The
approval cards and the Stop control are widget models the kernel still holds, which the new page's widget
manager loads again from the kernel, so their buttons keep working. A page that reconnects
just after the turn ended (a reload takes seconds) still gets the final state, until the next
turn starts or `ENDED_GRACE_SECONDS` have passed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from larik_jupyter.bridge_protocol import ShowOutputs
from larik_jupyter.frontends.notebook.bridge import Bridge
from larik_jupyter.frontends.notebook.running_request import running_request

ENDED_GRACE_SECONDS = 30.0


def running_cell_id(shell: Any) -> str | None:
    """The id of the notebook cell whose execution runs now, as the front end sent it."""
    return running_request(shell).metadata.cellId or None


class MirroredCell:
    """The outputs of cell `cell_id`, kept shown in the pages that said hello after the turn
    began. `outputs` returns them as nbformat outputs."""

    def __init__(
        self,
        bridge: Bridge,
        cell_id: str,
        outputs: Callable[[], list[dict[str, Any]]],
        *,
        grace: float = ENDED_GRACE_SECONDS,
    ) -> None:
        # A new turn's cell replaces an ended one's: its outputs are what a page should show.
        for listener in list(bridge.joined):
            owner = getattr(listener, "__self__", None)
            if isinstance(owner, MirroredCell) and owner.ended_at is not None:
                owner.detach()
        self.bridge = bridge
        self.grace = grace
        self.ended_at: float | None = None
        self.cell_id = cell_id
        self.outputs = outputs
        # Pages connected now get the cell's display messages; a hello from them is a rename.
        self._watching = {bridge.connection(page) for page in list(bridge.panels)}
        self.late: set[str] = set()
        bridge.joined.append(self._joined)

    def _joined(self, page: str) -> None:
        if self.ended_at is not None and time.monotonic() - self.ended_at > self.grace:
            self.detach()
        elif self.bridge.connection(page) not in self._watching:
            self.late.add(page)
            self._send({page})

    def changed(self) -> None:
        """The cell's outputs changed: show them again where the display updates do not go."""
        if self.late:
            self._send(self.late)

    def end(self) -> None:
        """The turn ended (its final state went out with the last change); a page that says
        hello within the grace period is still sent that final state."""
        self.ended_at = time.monotonic()

    def detach(self) -> None:
        """Stop showing this cell in pages that connect later: they see the notebook as saved."""
        if self._joined in self.bridge.joined:
            self.bridge.joined.remove(self._joined)

    def _send(self, pages: set[str]) -> None:
        op = ShowOutputs(cell_id=self.cell_id, outputs=self.outputs())
        for page in list(pages):
            if page in self.bridge.panels:
                self.bridge.send_to(page, op)
            else:
                self.late.discard(page)
