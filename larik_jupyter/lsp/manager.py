"""The language servers of one agent: started lazily, restarted a bounded number of times.

`after_write` and `report` are what the file tools and the `diagnostics` tool call; both
are bounded in time and never raise: a server that fails, hangs or crashes becomes a
one-line notice in the result, and the edit that triggered it stands.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from larik_jupyter.config.model import Config, LspServer
from larik_jupyter.lsp.client import LspClient
from larik_jupyter.lsp.diagnostic import format_block, format_notice
from larik_jupyter.lsp.servers import effective_servers, language_of, serves
from larik_jupyter.lsp.tracelog import TraceLog, log_path
from larik_jupyter.plural import counted

START_TIMEOUT = 10.0
WAIT_TIMEOUT = 3.0
QUIET = 0.1
MAX_RESTARTS = 2
_SUFFIX = "; see {log}. The edit itself succeeded."


@dataclass(frozen=True)
class ServerState:
    """What `/lsp` shows about one server."""

    name: str
    command: str
    state: str  # not started, starting, running, exited, failed
    pid: int | None
    starts: int
    open_files: int
    log: Path
    detail: str = ""


class _Slot:
    """One configured server and its current client, if started."""

    def __init__(self, name: str, spec: LspServer) -> None:
        self.name = name
        self.spec = spec
        self.client: LspClient | None = None
        self.starts = 0
        self.last_exit = ""
        self.log: TraceLog | None = None


class LspManager:
    """Every language server of one agent; lives as long as the agent and is closed with it."""

    def __init__(
        self,
        servers: Mapping[str, LspServer],
        root: Path,
        *,
        start_timeout: float = START_TIMEOUT,
        wait_timeout: float = WAIT_TIMEOUT,
        quiet: float = QUIET,
        max_restarts: int = MAX_RESTARTS,
    ) -> None:
        self.root = root
        self.start_timeout = start_timeout
        self.wait_timeout = wait_timeout
        self.quiet = quiet
        self.max_restarts = max_restarts
        self._slots = {name: _Slot(name, spec) for name, spec in servers.items()}
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def from_config(cls, config: Config, root: Path) -> LspManager:
        """A manager for the servers `config` enables (plus the Python default on PATH)."""
        return cls(effective_servers(config), root)

    @property
    def servers(self) -> list[str]:
        return list(self._slots)

    def after_write(self, path: Path, text: str) -> str:
        """Diagnostics blocks for `path` just written with `text`; "" when no server serves it."""
        blocks = [self._guarded(slot, path, text) for slot in self._serving(path)]
        return "\n".join(blocks)

    def report(self, path: Path | None) -> str:
        """The current diagnostics of `path` (synced from disk first), or of every open file."""
        if path is not None:
            slots = self._serving(path)
            if not slots:
                return f"No language server is configured for {self._rel(path)}."
            try:
                text = path.read_bytes().decode("utf-8", errors="surrogateescape")
            except OSError as exc:
                return f"Could not read {self._rel(path)} ({exc.strerror}); check the path."
            return "\n".join(self._guarded(slot, path, text, only_if_changed=True) for slot in slots)
        blocks: list[str] = []
        for slot in self._slots.values():
            client = slot.client
            if client is None:
                continue
            for path in client.documents:
                pub = client.latest(path.as_uri())
                if pub is not None:
                    blocks.append(format_block(slot.name, self._rel(path), pub.diagnostics))
        return "\n".join(blocks) or "No file has been checked yet; pass a path to check one."

    def states(self) -> list[ServerState]:
        """Every server with its state, for `/lsp`."""
        return [self._state(slot) for slot in self._slots.values()]

    def close(self) -> None:
        """Shut every started server down (bounded: a hung one is killed)."""
        with self._lock:
            self._closed = True
            slots = list(self._slots.values())
        for slot in slots:
            if slot.client is not None:
                slot.client.stop()
            if slot.log is not None:
                slot.log.close()

    # -- one server, one file ---------------------------------------------------------------

    def _serving(self, path: Path) -> list[_Slot]:
        rel, language = self._rel(path), language_of(path)
        return [slot for slot in self._slots.values() if serves(slot.spec, rel, language)]

    def _guarded(self, slot: _Slot, path: Path, text: str, *, only_if_changed: bool = False) -> str:
        try:
            return self._check(slot, path, text, only_if_changed)
        except Exception as exc:  # diagnostics are advice: a bug here must never fail an edit
            return format_notice(slot.name, f"internal error ({exc!r}); see {log_path(slot.name)}.")

    def _check(self, slot: _Slot, path: Path, text: str, only_if_changed: bool) -> str:
        client = self._client(slot)
        if isinstance(client, str):
            return format_notice(slot.name, client + _SUFFIX.format(log=log_path(slot.name)))
        if not client.wait_ready(self.start_timeout):
            return format_notice(slot.name, self._not_ready(slot, client))
        rel = self._rel(path)
        uri = path.as_uri()
        if only_if_changed and client.synced_text(uri) == text:
            pub = client.latest(uri)
            if pub is not None:
                return format_block(slot.name, rel, pub.diagnostics)
        uri, version, sent_at = client.sync(path, text)
        found = client.wait_diagnostics(uri, version, sent_at, self.wait_timeout, self.quiet)
        if found is not None:
            return format_block(slot.name, rel, found)
        if not client.alive:
            return format_notice(slot.name, self._failed(slot, client, "while checking the file"))
        return format_notice(
            slot.name, f"no diagnostics for {rel} within {self.wait_timeout:g} s; call diagnostics later."
        )

    def _client(self, slot: _Slot) -> LspClient | str:
        """The slot's live client, started or restarted as allowed; else why there is none."""
        with self._lock:
            if self._closed:
                return "the agent is closing"
            if slot.client is not None and slot.client.alive and not slot.client.failure:
                return slot.client
            if slot.client is not None:
                slot.last_exit = _cause(slot.client)
                slot.client.stop(timeout=0.5)
                slot.client = None
            if slot.starts > self.max_restarts:
                return f"it failed {slot.starts} times (last: {slot.last_exit}) and is not restarted again"
            if slot.log is None:
                slot.log = TraceLog(slot.name)
            slot.starts += 1
            try:
                slot.client = LspClient(slot.name, slot.spec, self.root, slot.log)
            except OSError as exc:
                slot.last_exit = f"could not run `{slot.spec.command}` ({exc.strerror or exc})"
                slot.log.write("error", slot.last_exit)
                return f"{slot.last_exit}; check lspServers.{slot.name}.command"
            return slot.client

    def _not_ready(self, slot: _Slot, client: LspClient) -> str:
        if client.alive and not client.failure:
            return (
                f"still starting after {self.start_timeout:g} s; diagnostics will come with a later "
                "edit. The edit itself succeeded."
            )
        return self._failed(slot, client, "before it was ready")

    def _failed(self, slot: _Slot, client: LspClient, when: str) -> str:
        left = max(0, self.max_restarts + 1 - slot.starts)
        return f"the server {_cause(client)} {when} ({counted(left, 'restart')} left)" + _SUFFIX.format(
            log=log_path(slot.name)
        )

    def _state(self, slot: _Slot) -> ServerState:
        client = slot.client
        command = " ".join([slot.spec.command, *slot.spec.args])
        if client is None:
            state = "failed" if slot.starts else "not started"
            pid, files, detail = None, 0, slot.last_exit
        else:
            if client.alive and client.ready.is_set():
                state = "running"
            elif client.alive and not client.failure:
                state = "starting"
            else:
                state = "failed" if slot.starts > self.max_restarts else "exited"
            pid, files = client.connection.pid, len(client.documents)
            detail = "" if state in ("running", "starting") else _cause(client)
        return ServerState(slot.name, command, state, pid, slot.starts, files, log_path(slot.name), detail)

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else str(path)


def _cause(client: LspClient) -> str:
    """Why a client is unusable: its failed handshake, or its exit code."""
    if client.failure and client.alive:
        return f"failed to initialize ({client.failure})"
    return f"exited with code {client.connection.exit_code()}"
