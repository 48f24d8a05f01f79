"""One streamed call through an official SDK: decode chunks, translate failures, mark cuts.

Both SDK providers run their attempts through `run_attempt`; only the chunk decoding
differs. A failure before any output is raised (retried by `with_retries` when it is
transient); a failure after output ends the stream with the partial message marked
interrupted, so nothing is ever truncated silently.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from types import ModuleType
from typing import Any

from larik_jupyter.llm.api_errors import ApiTarget, closed_early, translate
from larik_jupyter.llm.builder import MessageBuilder, cut_short
from larik_jupyter.llm.events import MessageEnd, StreamEvent
from larik_jupyter.llm.messages import Usage
from larik_jupyter.llm.retry import TransientError


class ChunkDecoder:
    """Turns an SDK's stream chunks into events; subclasses implement `feed`."""

    def __init__(self) -> None:
        self.builder = MessageBuilder()
        self.usage = Usage()
        self.usage_seen = False  # set by `feed` when the server reports usage
        self.stop_reason: str | None = None
        self.finished = False

    def reported_usage(self) -> Usage:
        """The usage the server reported; without one (some compatible servers send none), an
        empty usage marked `estimated`, which the agent fills in from the text."""
        return self.usage if self.usage_seen else Usage(estimated=True)

    def feed(self, chunk: Any) -> list[StreamEvent]:
        """The events for one chunk, already applied to `builder`."""
        raise NotImplementedError

    def emit(self, *events: StreamEvent) -> list[StreamEvent]:
        """Apply `events` to the builder and return them for yielding."""
        for event in events:
            self.builder.add(event)
        return list(events)


def _failure(exc: BaseException, sdk: ModuleType, target: ApiTarget) -> Exception:
    failure = translate(exc, sdk, target)
    if failure is None:
        raise exc
    return failure


async def run_attempt(
    sdk: ModuleType,
    target: ApiTarget,
    open_stream: Callable[[], Awaitable[Any]],
    new_decoder: Callable[[], ChunkDecoder],
) -> AsyncIterator[StreamEvent]:
    """Stream one attempt: the decoded events, then a `MessageEnd`."""
    decoder = new_decoder()
    try:
        stream = await open_stream()
    except Exception as exc:
        raise _failure(exc, sdk, target) from None
    streamed = False
    try:
        async for chunk in stream:
            for event in decoder.feed(chunk):
                streamed = True
                yield event
    except Exception as exc:
        failure = _failure(exc, sdk, target)
        if not streamed:
            raise failure from None
        reason = failure.reason if isinstance(failure, TransientError) else str(failure)
        yield cut_short(target.label, decoder.builder, decoder.reported_usage(), reason)
        return
    finally:
        await stream.close()
    if not decoder.finished:
        if not streamed:
            raise closed_early(target)
        reason = "the connection closed before the reply was complete"
        yield cut_short(target.label, decoder.builder, decoder.reported_usage(), reason)
        return
    yield MessageEnd(decoder.builder.message(), decoder.stop_reason or "end_turn", decoder.reported_usage())
