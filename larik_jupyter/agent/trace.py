"""Debug traces: every agent event, and the HTTP bodies of provider calls, beside the session.

`<session-dir>/<id>.trace/events.jsonl` gets one line per agent event (`time`, `type`,
the event's fields; subagents' events carry `agent`), and `http/` one
`NNNN-request.json` / `NNNN-response.json` / `NNNN-response.body` set per provider call.
Everything written passes the project's `Redactor` (`redaction.py`, shared with the exports):
auth headers become `[redacted: authorization header]`, and known secrets `[redacted: NAME]`
wherever they appear, raw or in the forms they take on the way (JSON-escaped, URL-encoded,
base64). Traces are never needed to resume; deleting the session deletes them.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import threading
import weakref
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Protocol

import orjson
from pydantic import BaseModel

from larik_jupyter.agent import events as ae
from larik_jupyter.config.secrets import redactor_for
from larik_jupyter.redaction import Redactor
from larik_jupyter.session.entry import now_rfc3339


class Traced(Protocol):
    """A turn loop a trace follows: its session file and directory, its events, its provider's
    HTTP clients."""

    cwd: Path

    @property
    def session_path(self) -> Path: ...

    def subscribe(self, listener: ae.Listener) -> None: ...

    def unsubscribe(self, listener: ae.Listener) -> None: ...

    def trace_http(self, factory: Callable[[], Any] | None) -> None: ...


_ACTIVE: weakref.WeakKeyDictionary[Traced, Trace] = weakref.WeakKeyDictionary()


def trace_dir(session_path: Path) -> Path:
    """`<session-dir>/<id>.trace` of the session file `session_path`."""
    return session_path.with_name(f"{session_path.stem}.trace")


def _default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, Path):
        return str(value)
    return repr(value)


class Trace:
    """An open trace directory; `listener` records events, `http_client` records HTTP bodies,
    both through `redactor`."""

    def __init__(self, directory: Path, redactor: Redactor) -> None:
        self.directory = directory
        self.http_dir = directory / "http"
        self.http_dir.mkdir(parents=True, exist_ok=True)
        self.redactor = redactor
        self._lock = threading.Lock()
        self._counter = itertools.count(len(list(self.http_dir.glob("*-request.json"))) + 1)
        self._events = open(directory / "events.jsonl", "ab")  # noqa: SIM115 - closed by close()
        self.main_listener = self.listener()

    def close(self) -> None:
        with self._lock:
            self._events.close()

    def record(self, event: ae.AgentEvent, agent: str | None = None) -> None:
        """Append one event with its time (and the subagent it came from)."""
        fields = dataclasses.asdict(event) if dataclasses.is_dataclass(event) else {}
        row: dict[str, Any] = {"time": now_rfc3339(), "type": type(event).__name__}
        if agent:
            row["agent"] = agent
        row.update(fields)
        plain = orjson.loads(orjson.dumps(row, default=_default))
        line = orjson.dumps(self.redactor.data(plain)).decode("utf-8") + "\n"
        with self._lock:
            if not self._events.closed:
                self._events.write(line.encode("utf-8"))
                self._events.flush()

    def listener(self, agent: str | None = None) -> ae.Listener:
        """An event listener writing to this trace."""
        return lambda event: self.record(event, agent)

    def next_number(self) -> int:
        with self._lock:
            return next(self._counter)

    def write_json(self, name: str, data: dict[str, Any]) -> None:
        plain = json.loads(json.dumps(data, default=str))
        text = json.dumps(self.redactor.data(plain), indent=2, ensure_ascii=False)
        (self.http_dir / name).write_text(text + "\n", encoding="utf-8")

    def http_client(self) -> Any:
        """A new `httpx2.AsyncClient` for an SDK that records each request and response."""
        import httpx2

        transport, _ = _wrappers()
        return httpx2.AsyncClient(transport=transport(httpx2.AsyncHTTPTransport(), self))


def _body(raw: bytes) -> Any:
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


@functools.cache
def _wrappers() -> tuple[type, type]:
    """The transport and stream wrappers, built on first use so httpx2 loads only when tracing."""
    import httpx2

    class TeeStream(httpx2.AsyncByteStream):
        """A response stream that hands every byte on and keeps a copy, written when it ends."""

        def __init__(self, inner: Any, done: Callable[[bytes], None]) -> None:
            self.inner = inner
            self.done = done
            self.chunks: list[bytes] = []
            self.written = False

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self.inner:
                self.chunks.append(chunk)
                yield chunk
            self._write()

        async def aclose(self) -> None:
            self._write()
            await self.inner.aclose()

        def _write(self) -> None:
            if not self.written:
                self.written = True
                self.done(b"".join(self.chunks))

    class TracingTransport(httpx2.AsyncBaseTransport):
        """Wraps the real transport: writes the request, then the response once read."""

        def __init__(self, inner: Any, trace: Trace) -> None:
            self.inner = inner
            self.trace = trace

        async def handle_async_request(self, request: Any) -> Any:
            trace = self.trace
            number = trace.next_number()
            body = await request.aread()
            trace.write_json(
                f"{number:04d}-request.json",
                {
                    "method": request.method,
                    "url": str(request.url.copy_remove_param("key")),
                    "headers": trace.redactor.headers(request.headers),
                    "body": _body(body),
                },
            )
            response = await self.inner.handle_async_request(request)
            trace.write_json(
                f"{number:04d}-response.json",
                {"status": response.status_code, "headers": trace.redactor.headers(response.headers)},
            )
            path = trace.http_dir / f"{number:04d}-response.body"

            def done(raw: bytes) -> None:
                path.write_text(trace.redactor.text(raw.decode("utf-8", "replace")), encoding="utf-8")

            return httpx2.Response(
                response.status_code,
                headers=response.headers,
                stream=TeeStream(response.stream, done),
                extensions=response.extensions,
                request=request,
            )

        async def aclose(self) -> None:
            await self.inner.aclose()

    return TracingTransport, TeeStream


# -- switching traces on and off for an agent ------------------------------------------------


def active_trace(loop: Traced) -> Trace | None:
    """The trace `loop` is writing, if any."""
    return _ACTIVE.get(loop)


def start_trace(loop: Traced) -> Trace:
    """Start tracing `loop`'s events and provider HTTP bodies (idempotent)."""
    current = _ACTIVE.get(loop)
    if current is not None:
        return current
    trace = Trace(trace_dir(loop.session_path), redactor_for(loop.cwd))
    loop.subscribe(trace.main_listener)
    loop.trace_http(trace.http_client)
    _ACTIVE[loop] = trace
    return trace


def stop_trace(loop: Traced) -> Trace | None:
    """Stop tracing `loop`; returns the trace that was stopped, None when none ran."""
    trace = _ACTIVE.pop(loop, None)
    if trace is None:
        return None
    loop.unsubscribe(trace.main_listener)
    loop.trace_http(None)
    trace.close()
    return trace
