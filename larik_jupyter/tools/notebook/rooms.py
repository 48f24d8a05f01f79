"""Whether a real-time collaboration room holds a notebook, asked of the Jupyter server that
started this kernel (`GET /larik/api/room`, `server/rooms.py`) before its file is written.

Under `jupyter-collaboration` or `jupyter-server-documents` an open notebook's document is
owned by the server, which loads a file written behind it back into the room, over the running
cell's output and the collaborators' typing. Edits of a notebook a page of this kernel shows go
through that page into the shared document (`tools/notebook/page.py`); a notebook that no such
page shows but a room holds is not written: the edit is refused with one sentence naming the
backend. The server is found by the `jpserver-<pid>.json` it writes in the runtime directory
(its pid: this kernel's parent); without one (a kernel not started by a Jupyter server) there
is no room to ask about.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

JUPYTER_COLLABORATION = "jupyter-collaboration"
SERVER_DOCUMENTS = "jupyter-server-documents"

ASK_TIMEOUT = 10.0


def _server() -> dict[str, str] | None:
    """The running Jupyter server that started this kernel: its `url`, `token`, `root_dir`."""
    from jupyter_core.paths import jupyter_runtime_dir

    info = Path(jupyter_runtime_dir()) / f"jpserver-{os.getppid()}.json"
    try:
        data = json.loads(info.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("url", "root_dir")):
        return None
    return {"url": data["url"], "token": str(data.get("token") or ""), "root_dir": data["root_dir"]}


def _ask(server: dict[str, str], query: dict[str, str]) -> dict[str, object] | None:
    """`server`'s answer at `/larik/api/room` (None: it does not answer, or not as larik's)."""
    request = urllib.request.Request(f"{server['url'].rstrip('/')}/larik/api/room?{urllib.parse.urlencode(query)}")
    if server["token"]:
        request.add_header("Authorization", f"token {server['token']}")
    try:
        with urllib.request.urlopen(request, timeout=ASK_TIMEOUT) as response:
            answer = json.loads(response.read())
    except (OSError, ValueError, urllib.error.HTTPError):
        return None
    return answer if isinstance(answer, dict) else None


def room_backend(path: Path) -> str | None:
    """The collaboration backend whose room holds the notebook at `path` now, or None (no
    server, no backend, no room, or a server without larik's extension)."""
    server = _server()
    if server is None:
        return None
    real, root = Path(os.path.realpath(path)), Path(os.path.realpath(os.path.expanduser(server["root_dir"])))
    if not real.is_relative_to(root):
        return None
    answer = _ask(server, {"path": real.relative_to(root).as_posix()})
    backend = answer.get("backend") if answer else None
    return str(backend) if backend and answer and answer.get("open") else None


def under_server_documents() -> bool:
    """Whether the Jupyter server that started this kernel runs jupyter-server-documents."""
    server = _server()
    answer = _ask(server, {}) if server else None
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
