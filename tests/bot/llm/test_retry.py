"""Backoff with full jitter, Retry-After, and when to give up."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from bot.errors import (
    ContextOverflow,
    ModelRateLimited,
    ModelRejected,
    ModelServerError,
    ModelStreamBroken,
    ModelUnavailable,
)
from bot.llm.retry import CAP_S, Backoff, retry_after_from_headers

NOW = 1_700_000_000.0


def policy(max_retries: int = 4, seed: int = 7) -> Backoff:
    return Backoff(max_retries=max_retries, rng=random.Random(seed))


def test_jitter_stays_within_the_doubling_ceiling() -> None:
    backoff = policy()
    for retry, ceiling in [
        (1, 0.5),
        (2, 1.0),
        (3, 2.0),
        (4, 4.0),
        (6, 16.0),
        (7, CAP_S),
        (60, CAP_S),
    ]:
        delays = [backoff.jitter(retry) for _ in range(200)]
        assert all(0.0 <= d <= ceiling for d in delays)
        assert max(delays) > ceiling * 0.8  # full jitter spreads over the whole range


def test_jitter_is_reproducible_from_the_injected_random() -> None:
    assert [policy(seed=1).jitter(3) for _ in range(2)] == [policy(seed=1).jitter(3)] * 2
    assert policy(seed=1).jitter(3) != policy(seed=2).jitter(3)


@pytest.mark.parametrize(
    "error",
    [
        ModelServerError("500", status=500),
        ModelUnavailable("refused"),
        ModelStreamBroken("cut"),
        ModelRateLimited("429"),
    ],
)
def test_retryable_errors_are_retried_up_to_the_limit(error: ModelServerError) -> None:
    backoff = policy(max_retries=2)
    first, second = backoff.delay(1, error), backoff.delay(2, error)
    assert first is not None and 0 <= first <= 0.5
    assert second is not None and 0 <= second <= 1.0
    assert backoff.delay(3, error) is None


@pytest.mark.parametrize("error", [ContextOverflow("long"), ModelRejected("401", status=401)])
def test_other_errors_are_not_retried(error: ContextOverflow) -> None:
    assert policy().delay(1, error) is None


def test_no_retries_configured_means_none() -> None:
    assert policy(max_retries=0).delay(1, ModelServerError("500")) is None


def test_retry_after_is_honoured_exactly() -> None:
    assert policy().delay(1, ModelRateLimited("429", retry_after=7.5)) == 7.5
    assert policy().delay(3, ModelRateLimited("429", retry_after=0.0)) == 0.0


def test_a_retry_after_longer_than_a_person_waits_gives_up() -> None:
    assert policy().delay(1, ModelRateLimited("429", retry_after=3600)) is None


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"Retry-After": "1.5"}, 1.5),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "1200", "retry-after": "9"}, 1.2),
        ({"retry-after-ms": "soon", "retry-after": "4"}, 4.0),
        ({"retry-after": "-1"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "whenever"}, None),
        ({}, None),
    ],
)
def test_retry_after_headers(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after_from_headers(headers, now=NOW) == expected


def test_retry_after_as_an_http_date() -> None:
    when = format_datetime(datetime.fromtimestamp(NOW + 30, tz=UTC), usegmt=True)
    assert retry_after_from_headers({"retry-after": when}, now=NOW) == pytest.approx(30.0)
    past = format_datetime(datetime.fromtimestamp(NOW - 30, tz=UTC), usegmt=True)
    assert retry_after_from_headers({"retry-after": past}, now=NOW) == 0.0
