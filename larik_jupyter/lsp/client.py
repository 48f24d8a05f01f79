"""The LSP side of one server: the handshake, open documents, and the diagnostics it publishes."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from larik_jupyter.config.model import LspServer
from larik_jupyter.lsp.connection import Connection
from larik_jupyter.lsp.diagnostic import Diagnostic, parse_diagnostics
from larik_jupyter.lsp.servers import language_of
from larik_jupyter.lsp.tracelog import TraceLog

_CAPABILITIES: dict[str, Any] = {
    "textDocument": {
        "synchronization": {"didSave": True, "dynamicRegistration": False},
        "publishDiagnostics": {"versionSupport": True, "relatedInformation": False},
    },
    "workspace": {"workspaceFolders": True, "configuration": True},
    "window": {"workDoneProgress": False},
}


@dataclass
class Published:
    """The newest diagnostics a server published for one document."""

    version: int | None
    seq: int
    at: float
    diagnostics: list[Diagnostic]


@dataclass
class _Document:
    path: Path
    version: int
    text: str


class LspClient:
    """One running server: `ready` once initialized; documents are synced as full text."""

    def __init__(self, name: str, spec: LspServer, root: Path, log: TraceLog) -> None:
        self.name = name
        self.spec = spec
        self.root = root
        self.log = log
        self.ready = threading.Event()
        self.failure: str | None = None
        self._save = False
        self._documents: dict[str, _Document] = {}
        self._published: dict[str, Published] = {}
        self._seq = 0
        self._changed = threading.Condition()
        self._sync_lock = threading.Lock()
        self.connection = Connection(
            [spec.command, *spec.args],
            cwd=root,
            env=spec.env,
            log=log,
            on_notification=self._on_notification,
            on_close=self._on_close,
        )
        self.connection.request("initialize", self._initialize_params()).add_done_callback(
            self._on_initialized
        )

    @property
    def alive(self) -> bool:
        return not self.connection.closed.is_set()

    @property
    def documents(self) -> list[Path]:
        """The files this server has open."""
        with self._sync_lock:
            return [doc.path for doc in self._documents.values()]

    def wait_ready(self, timeout: float) -> bool:
        """Wait (bounded) until the handshake is done; False if it failed or is still going."""
        deadline = time.monotonic() + timeout
        while not self.ready.wait(0.05):
            if not self.alive or self.failure or time.monotonic() >= deadline:
                return False
        return True

    def synced_text(self, uri: str) -> str | None:
        """The text last sent for `uri`, or None when it is not open."""
        with self._sync_lock:
            doc = self._documents.get(uri)
            return doc.text if doc else None

    def sync(self, path: Path, text: str) -> tuple[str, int, float]:
        """Send `text` as the document's content (open, or change then save): (uri, version, when)."""
        uri = path.as_uri()
        # Servers get JSON; bytes that are not UTF-8 (kept as surrogates) go as U+FFFD.
        clean = text.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")
        with self._sync_lock:
            sent_at = time.monotonic()
            doc = self._documents.get(uri)
            if doc is None:
                doc = self._documents[uri] = _Document(path, 1, clean)
                language = language_of(path) or (self.spec.languages or ["plaintext"])[0]
                self.connection.notify(
                    "textDocument/didOpen",
                    {"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": clean}},
                    note=f"{uri} v1",
                )
            else:
                doc.version += 1
                doc.text = clean
                self.connection.notify(
                    "textDocument/didChange",
                    {
                        "textDocument": {"uri": uri, "version": doc.version},
                        "contentChanges": [{"text": clean}],
                    },
                    note=f"{uri} v{doc.version}",
                )
            if self._save:
                self.connection.notify(
                    "textDocument/didSave", {"textDocument": {"uri": uri}}, note=uri
                )
            return uri, doc.version, sent_at

    def latest(self, uri: str) -> Published | None:
        """The newest publish for `uri`, if any."""
        with self._changed:
            return self._published.get(uri)

    def wait_diagnostics(
        self, uri: str, version: int, since: float, timeout: float, quiet: float
    ) -> list[Diagnostic] | None:
        """Diagnostics for `version` of `uri`; None when none came within `timeout` or the
        server exited. A publish tagged with that version is final; an untagged one is
        followed for `quiet` seconds, since such servers may publish in several passes."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                now = time.monotonic()
                pub = self._published.get(uri)
                if pub is not None and _fresh(pub, version, since):
                    if pub.version is not None:
                        return pub.diagnostics
                    seen = pub.seq
                    self._changed.wait(max(0.0, min(quiet, deadline - now)))
                    latest = self._published[uri]
                    if latest.seq == seen or time.monotonic() >= deadline:
                        return latest.diagnostics
                    continue
                if not self.alive or now >= deadline:
                    return None
                self._changed.wait(deadline - now)

    def stop(self, timeout: float = 2.0) -> None:
        """End the server politely, then by force; bounded by `timeout`."""
        self.connection.stop(timeout)

    # -- callbacks from the connection's reader thread --------------------------------------

    def _initialize_params(self) -> dict[str, Any]:
        return {
            "processId": os.getpid(),
            "clientInfo": {"name": "larik"},
            "rootUri": self.root.as_uri(),
            "rootPath": str(self.root),
            "workspaceFolders": [{"uri": self.root.as_uri(), "name": self.root.name}],
            "capabilities": _CAPABILITIES,
            "initializationOptions": self.spec.initializationOptions,
        }

    def _on_initialized(self, future: Any) -> None:
        try:
            result = future.result()
        except Exception as exc:
            self.failure = str(exc)
            self.log.write("error", f"initialize failed: {exc}")
            with self._changed:
                self._changed.notify_all()
            return
        sync = ((result or {}).get("capabilities") or {}).get("textDocumentSync")
        self._save = isinstance(sync, dict) and bool(sync.get("save"))
        self.connection.notify("initialized", {})
        self.ready.set()

    def _on_notification(self, method: str, params: Any) -> None:
        if method == "textDocument/publishDiagnostics" and isinstance(params, dict):
            diagnostics = parse_diagnostics(params.get("diagnostics"))
            version = params.get("version")
            uri = str(params.get("uri"))
            self.log.write("<--", f"publishDiagnostics {uri} v{version} ({len(diagnostics)})")
            with self._changed:
                self._seq += 1
                self._published[uri] = Published(
                    version if isinstance(version, int) else None,
                    self._seq,
                    time.monotonic(),
                    diagnostics,
                )
                self._changed.notify_all()
        elif method == "window/logMessage" and isinstance(params, dict):
            self.log.write("server", str(params.get("message", "")))
        else:
            self.log.write("<--", f"notify {method}")

    def _on_close(self) -> None:
        with self._changed:
            self._changed.notify_all()


def _fresh(pub: Published, version: int, since: float) -> bool:
    """Whether a publish describes the text we sent: by its version, else by its arrival time."""
    if pub.version is not None:
        return pub.version >= version
    return pub.at >= since
