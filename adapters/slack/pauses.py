"""Slack's ``Retry-After``, kept for every caller of the process's Web API client.

A 429 pauses its method in its scope — the channel for ``chat.postMessage`` (limited per
channel), the workspace for every other method — for every stream, card and panel at once: a
call to a paused method and scope is not sent, it fails at once with
:class:`~bot.errors.SurfaceRateLimited` and the time left, as the 429 itself did. Whoever made
the call decides what waits (the presenter's budgets, the draft sweeper); nothing sleeps here.
"""

from __future__ import annotations

from bot.api.kit import Clock
from bot.errors import SurfaceRateLimited

PER_CHANNEL = frozenset({"chat.postMessage"})
"""Methods Slack limits per channel rather than per workspace."""
REMEMBERED = 10_000
"""Pauses kept at most (the ones over are dropped as they end)."""


class Pauses:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._until: dict[tuple[str, str], float] = {}

    @staticmethod
    def scope(method: str, channel: str | None) -> str:
        return (channel or "-") if method in PER_CHANNEL else "workspace"

    def check(self, method: str, channel: str | None) -> None:
        """Raise :class:`SurfaceRateLimited` while ``method`` is paused in this scope."""
        key = (method, self.scope(method, channel))
        until = self._until.get(key)
        if until is None:
            return
        left = until - self._clock.monotonic()
        if left > 0:
            raise SurfaceRateLimited(left, f"Slack {method} rate limited (waiting out a 429)")
        del self._until[key]

    def note(self, method: str, channel: str | None, retry_after: float) -> None:
        """Slack answered 429 with ``retry_after``: nobody calls ``method`` here before then."""
        now = self._clock.monotonic()
        key = (method, self.scope(method, channel))
        self._until[key] = max(self._until.get(key, now), now + retry_after)
        if len(self._until) > REMEMBERED:
            self._until = {k: t for k, t in self._until.items() if t > now}
