"""Backoff policy and retry-after parsing."""

from __future__ import annotations

import email.utils
import time

import pytest

from larik_jupyter.llm.retry import RetryPolicy, parse_retry_after


def test_backoff_grows_exponentially_with_jitter_and_is_capped() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=4.0)
    for attempt, full in [(1, 1.0), (2, 2.0), (3, 4.0), (6, 4.0)]:
        waits = {policy.wait(attempt, None) for _ in range(50)}
        assert all(full / 2 <= w <= full for w in waits)
        assert len(waits) > 1


def test_retry_after_is_honoured_up_to_a_bound() -> None:
    policy = RetryPolicy(max_retry_after=30.0)
    assert policy.wait(1, 7.5) == 7.5
    assert policy.wait(1, 600.0) == 30.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": "soon"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str] | None, expected: float | None) -> None:
    assert parse_retry_after(headers) == expected


def test_parse_retry_after_http_date() -> None:
    when = email.utils.formatdate(time.time() + 20, usegmt=True)
    assert 15 <= (parse_retry_after({"retry-after": when}) or 0) <= 21
