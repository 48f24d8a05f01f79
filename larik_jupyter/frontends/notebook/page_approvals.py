"""A turn's approver where no comm reaches the kernel (jupyter-server-documents): the ask goes to
the Jupyter server that started the kernel (`server/approvals.py`), the notebook's pages show it
as a card, and the kernel waits for the answer a page posts there. Stop and interrupt cancel the
wait, which withdraws the ask, so no card stays behind a turn that ended."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from pydantic import ValidationError

from larik_jupyter.api import PermissionAnswer, PermissionRequest, detail_html
from larik_jupyter.approval_wire import LONGEST_WAIT, ApprovalPosted, ApprovalState
from larik_jupyter.server_link import JupyterServer, call, started_by


def _kernel_id() -> str | None:
    """This kernel's id, as its server names it (the connection file `kernel-<id>.json`)."""
    from ipykernel.connect import get_connection_file

    try:
        name = Path(get_connection_file()).name
    except (RuntimeError, AttributeError):  # not a kernel started as an app
        return None
    stem, ext = os.path.splitext(name)
    return stem.removeprefix("kernel-") if stem.startswith("kernel-") and ext == ".json" else None


class PageApprover:
    """Asks through `server` for the kernel `kernel`; None when the server cannot take the ask
    or stops answering (the call is then denied as unanswerable)."""

    def __init__(self, server: JupyterServer, kernel: str) -> None:
        self.server = server
        self.kernel = kernel

    async def __call__(self, request: PermissionRequest) -> PermissionAnswer | None:
        posted = ApprovalPosted(
            id=request.id, summary=request.summary, question=request.question,
            detail_html=detail_html(request.detail), ask=request.ask, kernel=self.kernel,
        )
        body = posted.model_dump_json().encode()
        endpoint = f"approvals/{request.id}"
        state = ApprovalState(pending=True)
        try:
            if await asyncio.to_thread(call, self.server, "approvals", method="POST", body=body) is None:
                return None
            while state.pending:
                state = await asyncio.to_thread(self._wait, endpoint)
        except BaseException:
            # The turn ended before an answer (Stop, an interrupt): the page's card goes. On a
            # worker thread, which finishes the request even if this task is cancelled again.
            await asyncio.to_thread(call, self.server, endpoint, method="DELETE")
            raise
        answer = state.answer
        return PermissionAnswer(answer.decision, answer.message) if answer is not None else None

    def _wait(self, endpoint: str) -> ApprovalState:
        """One wait for the answer; a server that stops answering (or not as larik's) ends it."""
        reply = call(self.server, endpoint, {"wait": str(LONGEST_WAIT)}, timeout=3 * LONGEST_WAIT)
        try:
            return ApprovalState.model_validate(reply)
        except ValidationError:
            return ApprovalState(pending=False)


def page_approver() -> PageApprover | None:
    """The approver of this kernel's turns through its Jupyter server, or None without one."""
    server, kernel = started_by(), _kernel_id()
    return PageApprover(server, kernel) if server is not None and kernel is not None else None
