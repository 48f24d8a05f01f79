"""Approvals answered in the page where no comm reaches the kernel (jupyter-server-documents).

There the server runs a notebook's cells itself and no widget of the kernel renders, so a turn
that asks publishes the ask here (`POST /larik/api/approvals`), the notebook's pages list the
asks of the kernels running it and show a card, and the kernel waits for the answer a page
posts. Asks and answers live in this server's memory only: nothing in the project's files can
answer, only a request the server authenticated. An ask goes when it is answered, when its
turn ends (the kernel withdraws it), or when its kernel stops asking for the answer (it died).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import msgspec

from larik_jupyter.api import LarikError
from larik_jupyter.approval_wire import (
    LONGEST_WAIT,
    ApprovalAnswer,
    ApprovalPosted,
    ApprovalState,
    PageApproval,
)

# An ask whose kernel has not asked for its answer for this long is gone (the kernel died).
FORGOTTEN_AFTER = 6 * LONGEST_WAIT


class _Kernel(msgspec.Struct):
    id: str


class _Session(msgspec.Struct):
    """What is read of one of the server's sessions: the notebook and its kernel."""

    path: str = ""
    kernel: _Kernel | None = None


def kernels_of(sessions: list[dict[str, Any]], path: str) -> set[str]:
    """The ids of the kernels that `sessions` (the session manager's list) run for `path`."""
    read = msgspec.convert(sessions, list[_Session])
    return {s.kernel.id for s in read if s.path == path and s.kernel is not None}


class UnknownApprovalError(LarikError):
    """An answer to an approval that is not pending (answered, withdrawn, or never asked)."""


@dataclass
class _Pending:
    posted: ApprovalPosted
    seen: float = field(default_factory=time.monotonic)  # the kernel's last request about it
    answer: ApprovalAnswer | None = None
    settled: asyncio.Event = field(default_factory=asyncio.Event)


class PendingApprovals:
    """The asks this server's kernels wait for, by id (the tool call's)."""

    def __init__(self) -> None:
        self._asks: dict[str, _Pending] = {}

    def publish(self, posted: ApprovalPosted) -> None:
        """A kernel waits for `posted`; publishing the same id again keeps its answer."""
        if posted.id not in self._asks:
            self._asks[posted.id] = _Pending(posted)

    def of(self, kernels: set[str]) -> list[PageApproval]:
        """The unanswered asks of `kernels`, oldest first, without those forgotten."""
        now = time.monotonic()
        for key in [k for k, p in self._asks.items() if now - p.seen > FORGOTTEN_AFTER]:
            self.withdraw(key)
        return [
            PageApproval.model_validate(p.posted.model_dump(exclude={"kernel"}))
            for p in self._asks.values()
            if p.posted.kernel in kernels and p.answer is None
        ]

    def answer(self, approval_id: str, answer: ApprovalAnswer) -> None:
        """The page's answer; the first one counts."""
        pending = self._asks.get(approval_id)
        if pending is None or pending.answer is not None:
            raise UnknownApprovalError(
                f"No approval {approval_id} is waiting for an answer; its turn may have ended or another page answered it."
            )
        pending.answer = answer
        pending.settled.set()

    async def wait(self, approval_id: str, seconds: float) -> ApprovalState:
        """The kernel's wait: the answer once given, within `seconds`, or still pending."""
        pending = self._asks.get(approval_id)
        if pending is None:
            return ApprovalState(pending=False)
        pending.seen = time.monotonic()
        try:
            await asyncio.wait_for(pending.settled.wait(), min(seconds, LONGEST_WAIT))
        except TimeoutError:
            pending.seen = time.monotonic()
            return ApprovalState(pending=True)
        if pending.answer is not None:
            self._asks.pop(approval_id, None)
        return ApprovalState(pending=False, answer=pending.answer)

    def withdraw(self, approval_id: str) -> None:
        """The turn ended before an answer: the ask goes, and a kernel waiting for it is told."""
        pending = self._asks.pop(approval_id, None)
        if pending is not None:
            pending.settled.set()
