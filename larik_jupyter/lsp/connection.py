"""One server process speaking JSON-RPC 2.0 over stdio, with `Content-Length` framing.

Three daemon threads per process: a reader that resolves responses and dispatches
notifications, a writer fed by a queue (so a server that stops reading never blocks the
caller), and a stderr pump into the trace log. Nothing here ever waits without a bound.
"""

from __future__ import annotations

import itertools
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import IO, Any

import orjson

from larik_jupyter.lsp.tracelog import TraceLog

Handler = Callable[[str, Any], None]


class ConnectionLost(Exception):
    """The server process ended or broke the framing before answering."""


def encode_message(message: Mapping[str, Any]) -> bytes:
    """A JSON-RPC message with its `Content-Length` header."""
    body = orjson.dumps(message)
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_message(stream: IO[bytes]) -> Any | None:
    """The next message on `stream`, or None at end of stream; `ValueError` for bad framing."""
    length: int | None = None
    while True:
        line = stream.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length is None:
        raise ValueError("a message without a Content-Length header")
    body = stream.read(length)
    if len(body) < length:
        return None
    return orjson.loads(body)


class Connection:
    """A started server process; `request` and `notify` never block on the server."""

    def __init__(
        self,
        argv: list[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        log: TraceLog,
        on_notification: Handler,
        on_close: Callable[[], None],
    ) -> None:
        self.log = log
        self._on_notification = on_notification
        self._on_close = on_close
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[str, float, Future[Any]]] = {}
        self._lock = threading.Lock()
        self._outbox: queue.Queue[bytes | None] = queue.Queue()
        self.closed = threading.Event()
        log.write("start", " ".join(argv))
        # Its own session: a kernel interrupt (SIGINT to our process group) must not kill it.
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env={**os.environ, **env},
            start_new_session=True,
        )
        for target in (self._read_loop, self._write_loop, self._stderr_loop):
            threading.Thread(target=target, name=f"lsp-{target.__name__}", daemon=True).start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def exit_code(self) -> int | None:
        """The process's exit status once it has ended (briefly waiting for a closing one)."""
        try:
            return self.process.wait(timeout=0.5 if self.closed.is_set() else 0)
        except subprocess.TimeoutExpired:
            return None

    def request(self, method: str, params: Any) -> Future[Any]:
        """Send a request; the future holds its result, or `ConnectionLost` / `RuntimeError`."""
        future: Future[Any] = Future()
        msg_id = next(self._ids)
        with self._lock:
            if self.closed.is_set():
                future.set_exception(ConnectionLost(f"the server had exited before {method}"))
                return future
            self._pending[msg_id] = (method, time.monotonic(), future)
        self.log.write("-->", f"request {method} #{msg_id}")
        self._outbox.put(encode_message({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))
        return future

    def notify(self, method: str, params: Any, *, note: str = "") -> None:
        """Send a notification (dropped once the connection is closed)."""
        if self.closed.is_set():
            return
        self.log.write("-->", f"notify {method} {note}".rstrip())
        self._outbox.put(encode_message({"jsonrpc": "2.0", "method": method, "params": params}))

    def stop(self, timeout: float = 2.0) -> None:
        """Ask the server to shut down, then end the process whatever it does; bounded by `timeout`."""
        if not self.closed.is_set():
            try:
                self.request("shutdown", None).result(timeout=timeout / 2)
            except Exception:  # a server that cannot shut down cleanly is ended below
                pass
            self.notify("exit", None)
        self._outbox.put(None)
        try:
            self.process.wait(timeout=timeout / 2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.write("stop", f"exit code {self.process.returncode}")

    # -- threads ----------------------------------------------------------------------------

    def _read_loop(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            while True:
                message = read_message(stdout)
                if message is None:
                    break
                self._dispatch(message)
        except (ValueError, OSError) as exc:
            self.log.write("error", f"unreadable message from the server ({exc}); closing")
        finally:
            self._close()

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            self.log.write("<--", f"ignored a non-object message {str(message)[:80]}")
            return
        method = message.get("method")
        if method is None:
            self._resolve(message)
        elif "id" in message:
            self._answer_server_request(message["id"], method, message.get("params"))
        else:
            try:
                self._on_notification(method, message.get("params"))
            except Exception as exc:  # a handler bug must not kill the reader
                self.log.write("error", f"handling {method}: {exc!r}")

    def _resolve(self, message: dict[str, Any]) -> None:
        with self._lock:
            entry = self._pending.pop(message.get("id"), None)  # type: ignore[arg-type]
        if entry is None:
            return
        method, started, future = entry
        ms = (time.monotonic() - started) * 1000
        error = message.get("error")
        self.log.write("<--", f"response {method} #{message.get('id')} {ms:.0f} ms{' error' if error else ''}")
        if error:
            future.set_exception(RuntimeError(f"{method} failed: {error.get('message', error)}"))
        else:
            future.set_result(message.get("result"))

    def _answer_server_request(self, msg_id: Any, method: str, params: Any) -> None:
        # Servers block on some of their own requests (pyright waits for its configuration);
        # "no settings" and "acknowledged" are always acceptable answers.
        items = params.get("items", []) if isinstance(params, dict) else []
        result = [None] * len(items) if method == "workspace/configuration" else None
        self.log.write("<--", f"server request {method} #{msg_id} (answered null)")
        self._outbox.put(encode_message({"jsonrpc": "2.0", "id": msg_id, "result": result}))

    def _write_loop(self) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        while True:
            data = self._outbox.get()
            if data is None:
                break
            try:
                stdin.write(data)
                stdin.flush()
            except (OSError, ValueError):
                break
        try:
            stdin.close()
        except OSError:
            pass

    def _stderr_loop(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        for line in stderr:
            self.log.write("stderr", line.decode("utf-8", errors="replace"))

    def _close(self) -> None:
        with self._lock:
            self.closed.set()
            pending, self._pending = self._pending, {}
        for method, _, future in pending.values():
            future.set_exception(ConnectionLost(f"the server exited before answering {method}"))
        self._outbox.put(None)
        self.log.write("closed", "the server's output ended")
        self._on_close()
