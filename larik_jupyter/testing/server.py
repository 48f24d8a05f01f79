"""A scripted model server on 127.0.0.1 that speaks the Anthropic and OpenAI streaming APIs."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from larik_jupyter.llm.script import Script, ScriptFailure, ScriptReply, parse_script
from larik_jupyter.testing import (
    anthropic_rules,
    anthropic_wire,
    api_rules,
    openai_rules,
    openai_wire,
)
from larik_jupyter.testing.wire import Chunk


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received: header names are lower-case, `body` is parsed JSON,
    `size` the body's length in bytes as it arrived."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    size: int = 0


@dataclass(frozen=True)
class _Protocol:
    error_body: Callable[[int, str], dict[str, Any]]
    full_response: Callable[[ScriptReply, dict[str, Any]], dict[str, Any]]
    stream_events: Callable[[ScriptReply, dict[str, Any], int], list[Chunk]]
    key_of: Callable[[dict[str, str]], str]
    bad_key_message: Callable[[str], str]
    problem: Callable[[dict[str, Any]], str | None]
    too_long: Callable[[dict[str, Any], int | None], str | None]


def _bearer(headers: dict[str, str]) -> str:
    return headers.get("authorization", "").removeprefix("Bearer ")


_ANTHROPIC = _Protocol(
    anthropic_wire.error_body,
    anthropic_wire.full_response,
    anthropic_wire.stream_events,
    # The SDK sends the key as `x-api-key` or, in newer versions, as a bearer token.
    lambda h: h.get("x-api-key") or _bearer(h),
    lambda key: "invalid x-api-key",
    anthropic_rules.anthropic_problem,
    anthropic_rules.anthropic_too_long,
)
# Like the real service, the OpenAI flavour echoes the rejected key, so tests can check
# that it never reaches the user.
_OPENAI = _Protocol(
    openai_wire.error_body,
    openai_wire.full_response,
    openai_wire.stream_events,
    _bearer,
    lambda key: (
        f"Incorrect API key provided: {key}. You can find your API key in your account settings."
    ),
    openai_rules.openai_problem,
    openai_rules.openai_too_long,
)
_ROUTES = {
    "/v1/messages": _ANTHROPIC,
    "/v1/chat/completions": _OPENAI,
    "/chat/completions": _OPENAI,
}


# Chooses the step for a request (a reply or failure, or its script JSON), for tests whose
# model calls are not known in advance.
Responder = Callable[[dict[str, Any]], "ScriptReply | ScriptFailure | dict[str, Any]"]


@dataclass
class _State:
    responses: list[ScriptReply | ScriptFailure]
    api_key: str | None
    fragment: int
    context_window: int | None = None
    send_usage: bool = True
    responder: Responder | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    served: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The user messages that drew a refusal. Anthropic's streaming-refusals page: "you must
    # reset the conversation context by removing or updating the turn that was refused before
    # continuing. Attempting to continue without resetting will result in continued refusals."
    refused: set[str] = field(default_factory=set)

    def refuses(self, request: dict[str, Any]) -> bool:
        """Whether `request` still carries a user message that drew a refusal."""
        with self.lock:
            return any(_user_key(m) in self.refused for m in _user_messages(request))

    def note_refusal(self, request: dict[str, Any]) -> None:
        users = _user_messages(request)
        if users:
            with self.lock:
                self.refused.add(_user_key(users[-1]))

    def take(self, request: dict[str, Any]) -> ScriptReply | ScriptFailure | None:
        if self.responder is not None:
            step = self.responder(request)
            if isinstance(step, dict):
                step = parse_script({"responses": [step]}, "from the responder").responses[0]
            with self.lock:
                self.served += 1
            return step
        with self.lock:
            if self.served >= len(self.responses):
                return None
            self.served += 1
            return self.responses[self.served - 1]


def _user_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]


def _user_key(message: dict[str, Any]) -> str:
    return json.dumps(api_rules.without_breakpoints(message.get("content")), sort_keys=True)


# What the server answers, without playing a step, to a request that repeats a refused turn.
_REFUSAL = ScriptReply(content=[], stop_reason="refusal")


def _handler(state: _State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read `requests` instead of a log."""

        def do_POST(self) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            raw = self.rfile.read(int(headers.get("content-length", "0") or 0))
            try:
                body: Any = json.loads(raw or b"null")
            except ValueError:
                body = raw.decode("utf-8", "replace")
            path = self.path.split("?", 1)[0]
            with state.lock:
                state.requests.append(RecordedRequest("POST", path, headers, body, len(raw)))
            protocol = _ROUTES.get(path)
            if protocol is None:
                self._json(
                    404, {"error": {"type": "not_found_error", "message": f"no route {path}"}}
                )
                return
            request = body if isinstance(body, dict) else {}
            key = protocol.key_of(headers)
            if state.api_key is not None and key != state.api_key:
                self._json(401, protocol.error_body(401, protocol.bad_key_message(key)))
                return
            # A request the real API refuses is refused here too, without playing a step.
            if problem := protocol.problem(request) or protocol.too_long(request, state.context_window):
                self._json(400, protocol.error_body(400, problem))
                return
            step = _REFUSAL if state.refuses(request) else state.take(request)
            if isinstance(step, ScriptReply) and step.final_stop_reason() == "refusal":
                state.note_refusal(request)
            if step is None:
                message = f"the test server's script is exhausted after {state.served} responses"
                self._json(400, protocol.error_body(400, message))
            elif isinstance(step, ScriptFailure):
                error = step.error
                extra = {}
                if error.retry_after is not None:
                    extra = {
                        "retry-after": f"{error.retry_after:g}",
                        "retry-after-ms": f"{error.retry_after * 1000:.0f}",
                    }
                message = error.message or f"scripted failure {error.status}"
                self._json(error.status, protocol.error_body(error.status, message), extra)
            elif request.get("stream"):
                # A server that sends no usage ignores the request for it.
                asked = request if state.send_usage else {k: v for k, v in request.items() if k != "stream_options"}
                self._stream(protocol.stream_events(step, asked, state.fragment), step.drop_after)
            else:
                self._json(200, protocol.full_response(step, request))

        def _json(
            self, status: int, payload: dict[str, Any], extra: dict[str, str] | None = None
        ) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in (extra or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, chunks: list[Chunk], drop_after: int | None) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            deltas = 0
            for chunk in chunks:
                if drop_after is not None and chunk.delta and deltas >= drop_after:
                    # Cut the connection mid-body, without the terminating chunk.
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                deltas += chunk.delta
                try:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk.data), chunk.data))
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    return  # the client stopped reading (a user's Stop): nothing to report
            self.wfile.write(b"0\r\n\r\n")

    return Handler


class ScriptedHTTPServer:
    """A real HTTP server on 127.0.0.1 (ephemeral port, own thread) playing a script.

    `responses` is a script (`{"responses": [...]}`, the format of `scripted:` models)
    or its list of responses, or a function choosing each step from the request body; each POST to `/v1/messages` (Anthropic) or
    `/v1/chat/completions` (OpenAI) takes the next one. A response's `drop_after`
    cuts the connection after that many output deltas. With `api_key` set, requests
    carrying another key get a 401; a request the real API would refuse (`api_rules`) gets
    the 400 it would give, and plays no response; a request that still carries a user message
    whose reply was a refusal (stop reason `refusal`) is refused again, as the real API does.
    A request over the model's context window (`context_window`: the window of the models
    the vendors' tables do not know, as a compatible server has its own) gets the API's 400; `send_usage=False` plays a
    compatible server that reports no usage in its OpenAI stream. Received requests are kept in `requests`.
    Use as a context manager; point the SDKs at `anthropic_base_url` / `openai_base_url`.
    """

    def __init__(
        self,
        responses: Script | dict[str, Any] | list[Any] | Responder,
        *,
        api_key: str | None = None,
        fragment: int = 5,
        context_window: int | None = None,
        send_usage: bool = True,
    ) -> None:
        responder = responses if callable(responses) else None
        if isinstance(responses, list):
            responses = {"responses": responses}
        script = (
            responses
            if isinstance(responses, Script)
            else Script(responses=[])
            if callable(responses)
            else parse_script(responses, "given to ScriptedHTTPServer")
        )
        self._state = _State(
            list(script.responses), api_key, fragment, context_window, send_usage, responder
        )
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self._state))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), name="scripted-http", daemon=True
        )

    @property
    def url(self) -> str:
        """The root URL, `http://127.0.0.1:<port>`."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def anthropic_base_url(self) -> str:
        """The base URL for the `anthropic` SDK (it appends `/v1/messages`)."""
        return self.url

    @property
    def openai_base_url(self) -> str:
        """The base URL for the `openai` SDK (it appends `/chat/completions`)."""
        return self.url + "/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        """The requests received so far, oldest first."""
        with self._state.lock:
            return list(self._state.requests)

    @property
    def remaining(self) -> int:
        """How many scripted responses are still unplayed."""
        with self._state.lock:
            return len(self._state.responses) - self._state.served

    def start(self) -> ScriptedHTTPServer:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and release the port."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()

    def __enter__(self) -> ScriptedHTTPServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
