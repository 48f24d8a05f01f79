"""The approvals a turn asks through the Jupyter server that started its kernel, where no comm
reaches the kernel (jupyter-server-documents), declared once for both ends: the kernel's
approver (`notebook/page_approvals.py`) and the server's endpoints (`server/approvals.py`), whose
answers to the page are in the sidebar's generated types (`server/schema.py`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

# A kernel waits at most this long (seconds) in one request for an answer, then asks again.
LONGEST_WAIT = 5


class PageApproval(BaseModel):
    """An approval a turn waits for where no comm reaches its kernel (jupyter-server-documents),
    as the page's card shows it: the in-cell card's question and detail (`textdiff.detail_html`),
    and its kind (`keep`: the call already ran; Keep or Roll back, no "always")."""

    id: str
    summary: str
    question: str
    detail_html: str
    ask: Literal["run", "keep"] = "run"


class PageApprovals(BaseModel):
    """`GET /larik/api/approvals?path=`: the pending approvals of the kernels running that
    notebook; `live` is false where no turn asks the page (no jupyter-server-documents): the
    page stops asking."""

    live: bool
    approvals: list[PageApproval]


class ApprovalPosted(PageApproval):
    """`POST /larik/api/approvals`: a kernel (its id) waits for this approval."""

    model_config = ConfigDict(extra="forbid")

    kernel: str


class ApprovalAnswer(BaseModel):
    """`POST /larik/api/approvals/<id>`: the page's answer, as the in-cell card's buttons give it
    (`allow` once, `always`, `deny` with an optional reason for the model)."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["allow", "always", "deny"]
    message: str = ""


class ApprovalState(BaseModel):
    """`GET /larik/api/approvals/<id>?wait=`: the kernel's view of its approval: still pending,
    answered (`answer`), or gone (neither: withdrawn, or never published)."""

    pending: bool
    answer: ApprovalAnswer | None = None
