"""When to try a failed model call again: exponential backoff with full jitter.

The n-th retry waits a uniform random time in ``[0, min(cap, base * 2**(n-1))]`` (base 0.5 s,
cap 20 s), unless the server said how long to wait (``Retry-After`` / ``retry-after-ms``): then
exactly that long, up to ``max_retry_after`` (``THREADLINE_MODEL_RETRY_AFTER_MAX_S``, 180 s by
default; the thread is told of the wait and its Stop works meanwhile). A server asking for more
is not retried: a person is waiting in the thread, and the error carries the server's figure.

Nothing here sleeps; the caller waits the returned delay on its clock.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from bot.errors import ModelError

BASE_S = 0.5
CAP_S = 20.0
MAX_RETRY_AFTER_S = 180.0


def retry_after_from_headers(headers: Mapping[str, str], *, now: float) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``retry-after``.

    ``retry-after`` may be a number of seconds or an HTTP date (compared with ``now``, epoch
    seconds). Unparseable or negative values count as absent.
    """
    lower = {key.lower(): value for key, value in headers.items()}
    millis = _number(lower.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000.0
    raw = lower.get("retry-after")
    if raw is None:
        return None
    seconds = _number(raw)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now)


def _number(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    if value != value or value < 0 or value == float("inf"):  # NaN, negative, infinite
        return None
    return value


@dataclass(frozen=True, slots=True)
class Backoff:
    """The retry policy of one model: how many retries, and how long before each."""

    max_retries: int
    rng: random.Random
    base: float = BASE_S
    cap: float = CAP_S
    max_retry_after: float = MAX_RETRY_AFTER_S

    def jitter(self, retry: int) -> float:
        """Full-jitter delay before retry number ``retry`` (1 for the first retry)."""
        ceiling = min(self.cap, self.base * 2 ** min(max(0, retry - 1), 30))
        return self.rng.uniform(0.0, ceiling)

    def delay(self, retry: int, error: ModelError) -> float | None:
        """Seconds to wait before retry number ``retry``, or ``None`` to give up and raise."""
        if not error.retryable or retry > self.max_retries:
            return None
        if error.retry_after is not None:  # 429, and 503 with Retry-After
            if error.retry_after > self.max_retry_after:
                return None
            return error.retry_after
        return self.jitter(retry)
