"""`logs/lsp-<name>.log`: a server's stderr and a one-line trace of every message."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import TextIO

from larik_jupyter import paths

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def log_path(name: str) -> Path:
    """Where the server called `name` logs: `<data>/logs/lsp-<name>.log`."""
    return paths.logs_dir() / f"lsp-{_UNSAFE.sub('_', name) or 'server'}.log"


class TraceLog:
    """An append-only log shared by a server's threads; a failing disk never stops the server."""

    def __init__(self, name: str) -> None:
        self.path = log_path(name)
        self._lock = threading.Lock()
        self._file: TextIO | None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8", errors="replace")  # noqa: SIM115
        except OSError:
            self._file = None

    def write(self, kind: str, text: str) -> None:
        """Append one line `<time> <kind> <text>`."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S") + f".{int(time.time() * 1000) % 1000:03d}"
        with self._lock:
            file = self._file  # read under the lock: the reader thread may write as it closes
            if file is None:
                return
            try:
                file.write(f"{stamp} {kind} {text.rstrip()}\n")
                file.flush()
            except (OSError, ValueError):
                pass

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
