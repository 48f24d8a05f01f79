"""The request the kernel runs now, as the front end sent it: who sent it (`header.session`),
whether it may ask for input (`content.allow_stdin`), which cell it is (`metadata.cellId`)."""

from __future__ import annotations

from typing import Any


def running_request(shell: Any) -> dict[str, Any]:
    """The message of the shell request `shell`'s kernel is handling; {} outside a kernel (a
    plain InteractiveShell, terminal IPython)."""
    get_parent = getattr(getattr(shell, "kernel", None), "get_parent", None)
    return dict(get_parent("shell")) if get_parent is not None else {}


def running_client(shell: Any) -> str:
    """Which front-end connection sent the running request (its `header.session`); "" when none."""
    return str(running_request(shell).get("header", {}).get("session", ""))
