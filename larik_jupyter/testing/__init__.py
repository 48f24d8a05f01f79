"""Offline stand-ins for model APIs, for larik_jupyter's tests and for your own.

`ScriptedHTTPServer` is a real HTTP server on 127.0.0.1 that speaks the Anthropic
Messages streaming API (`POST /v1/messages`) and the OpenAI chat completions streaming
API (`POST /v1/chat/completions`), playing a script in the format of `scripted:` models
(see the "scripted models" section of docs/format.md)::

    from larik_jupyter.testing import ScriptedHTTPServer

    script = {"responses": [
        {"content": [{"type": "text", "text": "Hello!"}], "usage": {"input_tokens": 3}},
        {"error": {"status": 429, "retry_after": 0.1}},
    ]}
    with ScriptedHTTPServer(script) as server:
        client = anthropic.Anthropic(api_key="test", base_url=server.anthropic_base_url)
        ...  # or openai.OpenAI(api_key="test", base_url=server.openai_base_url)
        server.requests[0].body  # what the client sent

Text and tool-call JSON arrive in small fragments, error responses carry the
protocol's error body (and `retry-after` when scripted), and `"drop_after": n` on a
response cuts the connection after n output deltas. `collect(provider, messages)`
runs one model call to the end and returns its events; `final(events)` is its
`MessageEnd`.
"""

from __future__ import annotations

from larik_jupyter.testing.server import RecordedRequest, ScriptedHTTPServer
from larik_jupyter.testing.streams import collect, final

__all__ = ["RecordedRequest", "ScriptedHTTPServer", "collect", "final"]
