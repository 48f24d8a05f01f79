"""Whether a real-time collaboration room holds a notebook, asked of the Jupyter server that
started this kernel (`GET /larik/api/room`, `server/rooms.py`) before its file is written.

Under `jupyter-collaboration` or `jupyter-server-documents` an open notebook's document is
owned by the server, which loads a file written behind it back into the room, over the running
cell's output and the collaborators' typing. Edits of a notebook a page of this kernel shows go
through that page into the shared document (`tools/notebook/page.py`); a notebook that no such
page shows but a room holds is not written: the edit is refused with one sentence naming the
backend. A kernel not started by a Jupyter server (`server_link.started_by`) has no room to
ask about.
"""

from __future__ import annotations

import os
from pathlib import Path

from larik_jupyter.server_link import call, started_by

JUPYTER_COLLABORATION = "jupyter-collaboration"
SERVER_DOCUMENTS = "jupyter-server-documents"


def room_backend(path: Path) -> str | None:
    """The collaboration backend whose room holds the notebook at `path` now, or None (no
    server, no backend, no room, or a server without larik's extension)."""
    server = started_by()
    root = server.root if server is not None else None
    real = Path(os.path.realpath(path))
    if server is None or root is None or not real.is_relative_to(root):
        return None
    answer = call(server, "room", {"path": real.relative_to(root).as_posix()})
    backend = answer.get("backend") if answer else None
    return str(backend) if backend and answer and answer.get("open") else None


def under_server_documents() -> bool:
    """Whether the Jupyter server that started this kernel runs jupyter-server-documents."""
    server = started_by()
    answer = call(server, "room") if server else None
    return bool(answer and answer.get("backend") == SERVER_DOCUMENTS)


def refusal(rel: str, backend: str) -> str:
    """The one sentence of an edit not written to a notebook a room holds."""
    return f"Not landed: {rel} {held(backend)}, so larik left the file unchanged; {instead(backend, 'ask')}."


def instead(backend: str, verb: str) -> str:
    """What the user can do instead (`verb`: ask, undo): a page running this kernel edits the
    room's document, except under jupyter-server-documents, where no comm reaches the kernel."""
    if backend == SERVER_DOCUMENTS:
        return f"close it in every tab, and {verb} again once its room has closed (up to about 6 minutes after its last tab closed)"
    return f"open it in a notebook page running this kernel, or close it in every tab, and {verb} again"


def held(backend: str) -> str:
    """What a room of `backend` holding the notebook means for its file."""
    return (
        f"is open in a real-time collaboration room of {backend}, whose server owns the notebook "
        "and would load a file written behind it over everyone's edits"
    )
