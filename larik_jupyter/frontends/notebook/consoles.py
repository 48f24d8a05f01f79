"""Telling console clients of a kernel (`jupyter console`, qtconsole) from notebook ones."""

from __future__ import annotations

from typing import Any

from larik_jupyter.frontends.notebook.running_request import (
    KernelRequest,
    read_request,
    running_request,
)


class ConsoleClients:
    """The client sessions that sent this kernel an `is_complete_request`.

    Console front ends (`jupyter console`, qtconsole) ask it on every Enter, to know whether
    the input is complete; notebook front ends and nbclient never do. So a request from one
    of these sessions comes from a console that shows text, which no setting has to say.
    """

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.sessions: set[str] = set()
        answer = kernel.shell_handlers.get("is_complete_request")
        if answer is None:
            return

        async def noting(stream: Any, ident: Any, parent: dict[str, Any]) -> Any:
            self.sessions.add(read_request(parent).header.session)
            return await answer(stream, ident, parent)

        kernel.shell_handlers["is_complete_request"] = noting

    def sent(self, request: KernelRequest) -> bool:
        """Whether `request` came from a console."""
        return request.header.session in self.sessions


_consoles: ConsoleClients | None = None


def console_asking(shell: Any) -> bool:
    """Whether the request `shell`'s kernel is running came from a console."""
    if _consoles is None or _consoles.kernel is not getattr(shell, "kernel", None):
        return False
    return _consoles.sent(running_request(shell))


def watch_consoles(kernel: Any) -> None:
    """Start noting console clients of `kernel` (once per kernel: a reload keeps the first)."""
    global _consoles
    if _consoles is None or _consoles.kernel is not kernel:
        _consoles = ConsoleClients(kernel)
