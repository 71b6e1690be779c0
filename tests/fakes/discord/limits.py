"""Discord's rate limits as the fake enforces them: per-route buckets keyed by the major
parameter (the channel), a global limit per bot, and the headers and 429 bodies Discord sends.

A bucket is a window that opens at its first request and allows ``limit`` requests until it
resets ``per`` seconds later. Messages created and edited in one channel share one bucket
(5 per 5 s); the global limit is 50 requests a second (interaction callbacks are exempt, as on
Discord). A test can also force 429s on a bucket (:meth:`RateLimits.storm`).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from bot.infra.clock import Clock


@dataclass(frozen=True, slots=True)
class Bucket:
    hash: str
    limit: int
    per: float


MESSAGES = Bucket("a1b2messages", 5, 5.0)
DELETES = Bucket("c3d4deletes", 5, 1.0)
TYPING = Bucket("e5f6typing", 5, 5.0)
PINS = Bucket("a7b8pins", 5, 5.0)
THREADS = Bucket("c9d0threads", 5, 5.0)
CHANNELS = Bucket("e1f2channels", 5, 5.0)
WEBHOOKS = Bucket("a3b4webhooks", 5, 2.0)
OTHER = Bucket("c5d6other", 50, 1.0)
GLOBAL_PER_SECOND = 50


@dataclass(slots=True)
class _Window:
    remaining: int
    resets_at: float


@dataclass(frozen=True, slots=True)
class Refusal:
    retry_after: float
    is_global: bool
    scope: str
    bucket: str
    major: str

    def body(self) -> dict[str, object]:
        return {
            "message": "You are being rate limited.",
            "retry_after": round(self.retry_after, 3),
            "global": self.is_global,
        }


class RateLimits:
    def __init__(self, clock: Clock, *, global_per_second: int = GLOBAL_PER_SECOND) -> None:
        self._clock = clock
        self._windows: dict[tuple[str, str], _Window] = {}
        self._global = _Window(global_per_second, -math.inf)
        self._global_limit = global_per_second
        self._storms: dict[tuple[str, str], tuple[int, float]] = {}
        self.refusals: list[Refusal] = []
        self.granted: Counter[tuple[str, str]] = Counter()

    def storm(self, bucket: Bucket, major: str, count: int, retry_after: float) -> None:
        """The next ``count`` requests in ``bucket`` for ``major`` get a 429 (a shared limit)."""
        self._storms[(bucket.hash, major)] = (count, retry_after)

    def take(
        self, bucket: Bucket, major: str, *, counts_globally: bool = True
    ) -> tuple[dict[str, str], Refusal | None]:
        """Headers for the answer, and the refusal when the request is over a limit."""
        now = self._clock.monotonic()
        key = (bucket.hash, major)
        window = self._windows.get(key)
        if window is None or now >= window.resets_at:
            window = self._windows[key] = _Window(bucket.limit, now + bucket.per)
        refusal = self._refusal(bucket, major, window, now, counts_globally)
        if refusal is None:
            window.remaining -= 1
            self.granted[key] += 1
            if counts_globally:
                self._global.remaining -= 1
        else:
            self.refusals.append(refusal)
        return self._headers(bucket, window, now, refusal), refusal

    def _refusal(
        self, bucket: Bucket, major: str, window: _Window, now: float, counts_globally: bool
    ) -> Refusal | None:
        storm = self._storms.get((bucket.hash, major))
        if storm is not None and storm[0] > 0:
            self._storms[(bucket.hash, major)] = (storm[0] - 1, storm[1])
            return Refusal(storm[1], False, "shared", bucket.hash, major)
        if counts_globally:
            if now >= self._global.resets_at:
                self._global = _Window(self._global_limit, now + 1.0)
            if self._global.remaining <= 0:
                return Refusal(self._global.resets_at - now, True, "global", bucket.hash, major)
        if window.remaining <= 0:
            return Refusal(window.resets_at - now, False, "user", bucket.hash, major)
        return None

    def _headers(
        self, bucket: Bucket, window: _Window, now: float, refusal: Refusal | None
    ) -> dict[str, str]:
        reset_after = max(0.0, window.resets_at - now)
        headers = {
            "X-RateLimit-Limit": str(bucket.limit),
            "X-RateLimit-Remaining": str(max(0, window.remaining)),
            "X-RateLimit-Reset": f"{self._clock.now() + reset_after:.3f}",
            "X-RateLimit-Reset-After": f"{reset_after:.3f}",
            "X-RateLimit-Bucket": bucket.hash,
        }
        if refusal is not None:
            headers["Retry-After"] = str(math.ceil(refusal.retry_after))
            headers["X-RateLimit-Scope"] = refusal.scope
            headers["Via"] = "1.1 google"
            if refusal.is_global:
                headers["X-RateLimit-Global"] = "true"
        return headers

    @property
    def count_429(self) -> int:
        return len(self.refusals)
