"""The sessions of outside agents (MCP clients) working in the kernel, one per connection
(`Agent.outside`): opened on a connection's first call, closed when it goes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Generic, Protocol, TypeVar


class HeldSession(Protocol):
    """What the kernel's agent needs of an outside agent's session."""

    @property
    def session_path(self) -> Path: ...

    def close(self, *, keep_mcp: bool = False) -> None: ...


A = TypeVar("A", bound=HeldSession, covariant=True)


class OutsideSessions(Generic[A]):
    """The outside agents' sessions, by connection; `make(client)` opens one for a client."""

    def __init__(self, make: Callable[[str], A]) -> None:
        self._make = make
        self._held: dict[str, A] = {}

    def __iter__(self) -> Iterator[A]:
        return iter(list(self._held.values()))

    def open(self, key: str, client: str) -> A:
        """The session of the outside agent connected as `key`, opened on its first call: a
        session of its own, named after the client."""
        agent = self._held.get(key)
        if agent is None:
            agent = self._held[key] = self._make(client)
        return agent

    def close(self, key: str) -> None:
        """The outside agent `key` disconnected: its session closes."""
        agent = self._held.pop(key, None)
        if agent is not None:
            agent.close()

    def holding(self, path: Path) -> A | None:
        """The outside agent whose session is the file at `path`, if one is connected."""
        return next((a for a in self._held.values() if a.session_path == path), None)

    def close_all(self) -> None:
        for key in list(self._held):
            self.close(key)
