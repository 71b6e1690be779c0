"""Slack's per-method rate limits, enforced the way Slack answers them.

Each limited method allows ``count`` calls in any ``window`` seconds per key (the workspace, or
the channel for ``chat.postMessage``); the next call gets HTTP 429 with ``Retry-After`` (whole
seconds, like Slack, unless the windows are scaled down). A client that calls again before the
retry-after has passed commits a *violation*; the fake counts them, and refuses that call too.
``storm`` makes the next calls of a method fail with 429 regardless of the window.

``time_scale`` shrinks every window (and so every Retry-After) by that factor, keeping the
counts: a scale of 10 turns Tier 3's 50 a minute into 50 per 6 seconds.
"""

from __future__ import annotations

import math
import time
from collections import Counter, defaultdict, deque
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limit:
    count: int
    window: float
    per: str
    """``team`` or ``channel``."""


TIER_1 = Limit(5, 60.0, "team")  # documented 1+ a minute; short bursts tolerated
TIER_2 = Limit(20, 60.0, "team")
TIER_3 = Limit(50, 60.0, "team")
TIER_4 = Limit(100, 60.0, "team")
LIMITS: dict[str, Limit] = {
    "chat.update": TIER_3,
    "chat.delete": TIER_3,
    "chat.postMessage": Limit(5, 5.0, "channel"),  # about 1 a second per channel, bursts allowed
    "chat.postEphemeral": TIER_4,
    "chat.startStream": TIER_2,
    "chat.appendStream": TIER_4,
    "chat.stopStream": TIER_2,
    "pins.add": TIER_2,
    "pins.remove": TIER_2,
    "pins.list": TIER_2,
    "reactions.add": TIER_3,
    "reactions.remove": TIER_3,
    "users.info": TIER_4,
    "usergroups.users.list": TIER_2,
    "conversations.info": TIER_3,
    "conversations.replies": TIER_3,
    "conversations.history": TIER_3,
    "auth.test": TIER_4,
    "apps.connections.open": TIER_1,
    "assistant.threads.setSuggestedPrompts": TIER_4,
    "assistant.threads.setTitle": TIER_4,
    "views.publish": TIER_4,
}
"""``assistant.threads.setStatus`` has "special" limits Slack does not publish: not limited here."""


@dataclass(frozen=True, slots=True)
class Refusal:
    retry_after: float
    header: str
    violation: bool


class RateLimits:
    def __init__(self, *, time_scale: float = 1.0, clock: object = time.monotonic) -> None:
        self.time_scale = time_scale
        self._now = clock
        self._calls: dict[tuple[str, str], deque[float]] = defaultdict(deque)
        self._paused: dict[tuple[str, str], float] = {}
        self._storms: dict[str, tuple[int, float]] = {}
        self.rejected: Counter[str] = Counter()
        """429s answered, per method."""
        self.violations: Counter[str] = Counter()
        """Calls made before the Retry-After of an earlier 429 had passed, per method."""
        self.allowed: Counter[str] = Counter()

    def storm(self, method: str, count: int, retry_after: float = 1.0) -> None:
        """The next ``count`` calls of ``method`` get 429 with ``retry_after`` seconds."""
        self._storms[method] = (count, retry_after)

    def storm_all(self, count: int, retry_after: float = 1.0) -> None:
        """A 429 storm on every limited method at once (``assistant.threads.setStatus`` too)."""
        for method in [*LIMITS, "assistant.threads.setStatus"]:
            self.storm(method, count, retry_after)

    def check(self, method: str, team: str, channel: str | None) -> Refusal | None:
        """Record a call; a :class:`Refusal` when Slack would answer 429."""
        now = self._clock()
        limit = LIMITS.get(method)
        per_channel = limit is not None and limit.per == "channel"
        key = (method, (channel or "-") if per_channel else team)
        violation = now < self._paused.get(key, -math.inf)
        header: str | None = None
        storm = self._storm_wait(method)
        if storm is not None:
            header = _seconds(storm)
        elif violation:
            header = self._header(self._paused[key] - now)
        elif limit is not None and (wait := self._window_wait(key, limit, now)) is not None:
            header = self._header(wait)
        if header is None:
            self._calls[key].append(now)
            self.allowed[method] += 1
            return None
        if violation:
            self.violations[method] += 1
        self.rejected[method] += 1
        self._paused[key] = max(self._paused.get(key, -math.inf), now + float(header))
        return Refusal(float(header), header, violation)

    def _clock(self) -> float:
        return float(self._now())  # type: ignore[operator]

    def _storm_wait(self, method: str) -> float | None:
        storm = self._storms.get(method)
        if storm is None:
            return None
        left, retry_after = storm
        if left <= 1:
            del self._storms[method]
        else:
            self._storms[method] = (left - 1, retry_after)
        return retry_after

    def _window_wait(self, key: tuple[str, str], limit: Limit, now: float) -> float | None:
        window = limit.window / self.time_scale
        calls = self._calls[key]
        while calls and calls[0] <= now - window:
            calls.popleft()
        if len(calls) < limit.count:
            return None
        return calls[0] + window - now

    def _header(self, wait: float) -> str:
        """Slack sends whole seconds; scaled-down windows need finer values."""
        if self.time_scale == 1.0:
            return str(max(1, math.ceil(wait)))
        return _seconds(wait)


def _seconds(value: float) -> str:
    return f"{max(value, 0.001):.3f}".rstrip("0").rstrip(".")
