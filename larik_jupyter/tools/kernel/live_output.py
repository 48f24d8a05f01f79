"""What a running `python` call prints, kept for its result and handed on as it comes.

The call's code runs on the kernel's main thread and holds it until it ends, so what it printed
since the last update is sent by a ticker thread of its own, at most every `EVERY` seconds; each
update carries only the new text, cut to its last `MAX_UPDATE` characters (the view keeps a
bounded tail, the result keeps everything up to its own cap).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType

EVERY = 0.1  # seconds between updates: at most ten a second
MAX_UPDATE = 4000


class _Stream:
    """A file-like stdout or stderr keeping what is written (appends need no lock; the ticker
    only reads pieces already there)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.pieces: list[str] = []
        self.sent = 0  # how many pieces went out as live output

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self.pieces.append(text)
        return len(text)

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Nothing is buffered."""

    def isatty(self) -> bool:
        return False

    def getvalue(self) -> str:
        return "".join(self.pieces)

    def new(self) -> str:
        """What was written since the last call."""
        end = len(self.pieces)
        text = "".join(self.pieces[self.sent : end])
        self.sent = end
        return text


class LiveOutput:
    """The stdout and stderr of one call; `send`, when given, gets the new text while the call
    runs, from a thread of its own (within one update, stdout's before stderr's)."""

    def __init__(self, send: Callable[[str], None] | None) -> None:
        self._send = send
        self.stdout = _Stream("stdout")
        self.stderr = _Stream("stderr")
        self._done = threading.Event()
        self._ticker: threading.Thread | None = None

    def _flush(self) -> None:
        new = self.stdout.new() + self.stderr.new()
        if not new:
            return
        if len(new) > MAX_UPDATE:
            new = f"[… {len(new) - MAX_UPDATE} characters …]\n" + new[-MAX_UPDATE:]
        assert self._send is not None
        self._send(new)

    def _tick(self) -> None:
        while not self._done.wait(EVERY):
            self._flush()

    def __enter__(self) -> LiveOutput:
        if self._send is not None:
            self._ticker = threading.Thread(target=self._tick, name="larik-live-output", daemon=True)
            self._ticker.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._ticker is not None:
            self._done.set()
            self._ticker.join()  # no update after the call: its result replaces them
