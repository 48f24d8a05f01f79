"""The Jupyter server that started this kernel, and calls to larik's endpoints on it.

The server is found by the `jpserver-<pid>.json` it writes in the runtime directory (its pid:
this kernel's parent); without one (a kernel not started by a Jupyter server) there is none.
A call authenticates with the server's token; a server run without a token checks a changing
request's XSRF cookie against its header, so such a request carries a fresh pair.
"""

from __future__ import annotations

import json
import os
import secrets
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import msgspec

TIMEOUT = 10.0


class JupyterServer(msgspec.Struct, frozen=True):
    """A running Jupyter server, as its runtime file (`jupyter server list`) says: where it
    answers, its token ('' without one), its root (`root_dir`; older servers' `notebook_dir`)."""

    url: str
    token: str = ""
    root_dir: str | None = None
    notebook_dir: str | None = None

    @property
    def root(self) -> Path | None:
        """The folder it serves, on this machine (None when its runtime file does not say)."""
        root = self.root_dir or self.notebook_dir
        return Path(os.path.realpath(os.path.expanduser(root))) if root else None


def started_by() -> JupyterServer | None:
    """The running Jupyter server that started this kernel, or None."""
    from jupyter_core.paths import jupyter_runtime_dir

    info = Path(jupyter_runtime_dir()) / f"jpserver-{os.getppid()}.json"
    try:
        return msgspec.json.decode(info.read_bytes(), type=JupyterServer)
    except (OSError, msgspec.ValidationError, msgspec.DecodeError):
        return None


def call(
    server: JupyterServer, endpoint: str, query: dict[str, str] | None = None, *,
    method: str = "GET", body: bytes | None = None, timeout: float = TIMEOUT,
) -> dict[str, object] | None:
    """`server`'s JSON answer at `/larik/api/<endpoint>`, {} when it answers with no body
    (None: it does not answer, answers with an error, or not as larik's)."""
    url = f"{server.url.rstrip('/')}/larik/api/{endpoint}"
    if query:
        url += f"?{urllib.parse.urlencode(query)}"
    request = urllib.request.Request(url, data=body, method=method)
    if server.token:
        request.add_header("Authorization", f"token {server.token}")
    elif method != "GET":
        xsrf = secrets.token_hex(16)  # the double-submitted pair a tokenless server checks
        request.add_header("Cookie", f"_xsrf={xsrf}")
        request.add_header("X-XSRFToken", xsrf)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = response.read()
        answer = json.loads(data) if data else {}
    except (OSError, ValueError, urllib.error.HTTPError):
        return None
    return answer if isinstance(answer, dict) else None
