"""Bounded exponential backoff with jitter for transient model-call failures.

Only failures that happen before any output reached the user are retried (429, 5xx
and connection errors); each retry is announced with a `Retrying` event so the user
sees why the answer is late.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass

from larik_jupyter.llm.events import Retrying, StreamEvent
from larik_jupyter.llm.provider import ProviderError
from larik_jupyter.plural import counted


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry. `attempts` counts the first try too."""

    attempts: int = 3
    base_delay: float = 1.0
    max_delay: float = 20.0
    # A server asking for a longer pause than this is not worth blocking the user on.
    max_retry_after: float = 60.0

    def wait(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        backoff = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        # "Equal jitter": at least half the backoff, so retries never stampede at zero.
        return backoff / 2 + random.uniform(0, backoff / 2)


class TransientError(Exception):
    """A retryable failure before any output: `reason` is a short phrase for the user."""

    def __init__(
        self, reason: str, *, status: int | None, retry_after: float | None, advice: str
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.retry_after = retry_after
        self.advice = advice


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """The pause a server asked for via `retry-after-ms` or `retry-after` (seconds or HTTP date)."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())


async def with_retries(
    label: str, policy: RetryPolicy, attempt: Callable[[], AsyncIterator[StreamEvent]]
) -> AsyncIterator[StreamEvent]:
    """Run `attempt()` until it streams to the end, retrying on `TransientError`.

    After the last attempt fails the error becomes one `ProviderError` sentence naming
    `label` (the `provider:model` string), the number of attempts and what to do.
    """
    for number in range(1, policy.attempts + 1):
        try:
            async for event in attempt():
                yield event
            return
        except TransientError as failure:
            if number == policy.attempts:
                raise ProviderError(
                    f"{label} failed after {counted(number, 'attempt')} ({failure.reason}); {failure.advice}.",
                    status=failure.status,
                ) from None
            wait = policy.wait(number, failure.retry_after)
            yield Retrying(
                attempt=number + 1,
                max_attempts=policy.attempts,
                wait_seconds=wait,
                reason=failure.reason,
            )
            await asyncio.sleep(wait)
