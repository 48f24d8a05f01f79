"""Finding the kernel to attach to: a notebook's, through a running Jupyter server (found from
the server's runtime files, as `jupyter server list` does, unless its URL is given), or the one
a kernel connection file names."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import msgspec

from larik_jupyter.api import LarikError
from larik_jupyter.server_link import JupyterServer

CONNECTION_KEYS = ("shell_port", "iopub_port", "control_port", "ip", "key")


@dataclass(frozen=True)
class Target:
    """A kernel to attach to: its connection file, and the notebook it runs (when known)."""

    connection_file: Path
    notebook: Path | None = None


def from_connection_file(name: str) -> Target:
    """The kernel a connection file names (a path, or a name in Jupyter's runtime folder)."""
    from jupyter_client import find_connection_file

    try:
        path = Path(find_connection_file(name))
    except OSError:
        raise LarikError(
            f"No kernel connection file {name} was found (as a path or in Jupyter's runtime folder); "
            "pass the file a running kernel wrote (`%connect_info` in the notebook shows it)."
        ) from None
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LarikError(f"{path} is not a kernel connection file ({exc}); pass the file a running kernel wrote.") from None
    missing = [key for key in CONNECTION_KEYS if not isinstance(info, dict) or key not in info]
    if missing:
        raise LarikError(
            f"{path} is not a kernel connection file (it has no {', '.join(missing)}); pass the file a running kernel wrote."
        )
    return Target(path)


class _Named(msgspec.Struct):
    path: str | None = None
    id: str = ""


class JupyterSession(msgspec.Struct):
    """What larik reads of one of `/api/sessions`' sessions: its path and kernel (older servers
    put the path under `notebook`)."""

    path: str | None = None
    notebook: _Named | None = None
    kernel: _Named | None = None


def servers(url: str | None, token: str | None) -> list[JupyterServer]:
    """The Jupyter servers to look in: the one given, else every running one."""
    if url:
        return [JupyterServer(url=url.rstrip("/") + "/", token=token or "")]
    from jupyter_server.serverapp import list_running_servers

    found = []
    for info in list_running_servers():
        try:
            found.append(msgspec.convert(info, JupyterServer))
        except msgspec.ValidationError:
            continue  # a runtime file larik cannot read: not a server to look in
    return found


def from_notebook(notebook: str, *, url: str | None = None, token: str | None = None) -> Target:
    """The kernel of the notebook at `notebook`, open in a running Jupyter server."""
    found = servers(url, token)
    if not found:
        raise LarikError(
            "No running Jupyter server was found (none left its runtime file); start JupyterLab "
            "and open the notebook, or pass the server's --url and --token."
        )
    wanted = Path(os.path.realpath(notebook))
    for server in found:
        for session in _sessions(server):
            path = _session_notebook(server, session)
            if path != wanted and session.path != notebook:
                continue
            kernel_id = session.kernel.id if session.kernel is not None else ""
            return Target(_kernel_file(kernel_id, server), path or wanted)
    where = ", ".join(s.url for s in found)
    raise LarikError(
        f"The notebook {notebook} is not open with a kernel in the Jupyter server at {where}; "
        "open it in JupyterLab (or start its kernel), then start this server again."
    )


def _sessions(server: JupyterServer) -> list[JupyterSession]:
    url = f"{server.url}api/sessions"
    request = urllib.request.Request(url, headers={"Authorization": f"token {server.token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            data = response.read()
    except (OSError, urllib.error.URLError) as exc:
        raise LarikError(f"The Jupyter server at {server.url} did not list its sessions ({exc}); check its URL and token.") from None
    try:
        return msgspec.json.decode(data, type=list[JupyterSession])
    except msgspec.DecodeError as exc:
        raise LarikError(f"The Jupyter server at {server.url} answered /api/sessions with something else ({exc}); check its URL.") from None


def _session_notebook(server: JupyterServer, session: JupyterSession) -> Path | None:
    """Where the session's notebook is on this machine (the server's root joined with its path)."""
    path = session.path or (session.notebook.path if session.notebook is not None else None)
    root = server.root
    if not path or root is None:
        return None
    return Path(os.path.realpath(root / path))


def _kernel_file(kernel_id: str, server: JupyterServer) -> Path:
    from jupyter_core.paths import jupyter_runtime_dir

    path = Path(jupyter_runtime_dir()) / f"kernel-{kernel_id}.json"
    if not path.is_file():
        raise LarikError(
            f"The kernel {kernel_id} of the server at {server.url} left no connection file in "
            f"{path.parent} (a server on another machine or with another runtime folder); pass its "
            "connection file with --connection-file."
        )
    return path
