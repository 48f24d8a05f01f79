"""Which real-time collaboration backend owns a notebook's document on this server.

With `jupyter-collaboration` (its server extension `jupyter_server_ydoc`, collaboration not
disabled) or `jupyter-server-documents` (`jupyter_server_documents`), a notebook open in the
browser is a document in a room on the server, which the server saves to the file. A file
written behind it is loaded back into the room, over what the collaborators and the running
cell have there; so the kernel asks, before it writes a notebook's file, whether a room holds
it (`GET /larik/api/room?path=`), and refuses if one does (`tools/notebook/rooms.py`).
"""

from __future__ import annotations

from typing import Any

import msgspec

from larik_jupyter.api import JUPYTER_COLLABORATION, SERVER_DOCUMENTS

_EXTENSIONS = {JUPYTER_COLLABORATION: "jupyter_server_ydoc", SERVER_DOCUMENTS: "jupyter_server_documents"}


class Room(msgspec.Struct):
    """The answer about one notebook: the backend that owns open documents on this server
    (None: no collaboration backend), and whether a room of it holds the notebook now."""

    backend: str | None = None
    open: bool = False


def _app(serverapp: Any, extension: str) -> Any:
    """The running extension app of `extension`, or None when it is not loaded and enabled."""
    manager = getattr(serverapp, "extension_manager", None)
    if manager is None:
        return None
    found = manager.extensions.get(extension)
    if found is None or not getattr(found, "enabled", False):
        return None
    return next(iter(manager.extension_apps.get(extension, ())), None)


def backend(serverapp: Any) -> tuple[str, Any] | None:
    """The collaboration backend that owns open notebooks here, with its extension app."""
    for name, extension in _EXTENSIONS.items():
        app = _app(serverapp, extension)
        if app is not None and not getattr(app, "disable_rtc", False):
            return name, app
    return None


def backend_room(serverapp: Any) -> Room:
    """The backend alone (no notebook asked about): `open` is false."""
    found = backend(serverapp)
    return Room(found[0] if found else None)


async def room_of(serverapp: Any, path: str) -> Room:
    """Whether a collaborative room holds the notebook at `path` (relative to the server's
    root). A backend whose rooms cannot be looked into counts as holding it."""
    found = backend(serverapp)
    if found is None:
        return Room()
    name, app = found
    if name == JUPYTER_COLLABORATION:
        document = await app.get_document(path=path, content_type="notebook", file_format="json", copy=False)
        return Room(name, document is not None)
    manager = getattr(app, "yroom_manager", None) or serverapp.web_app.settings.get("yroom_manager")
    file_ids = serverapp.web_app.settings.get("file_id_manager")
    if manager is None or file_ids is None:
        return Room(name, True)
    file_id = file_ids.get_id(path)
    return Room(name, file_id is not None and manager.has_room(f"json:notebook:{file_id}"))
