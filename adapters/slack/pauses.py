"""Slack's ``Retry-After``, kept for every caller of the process's Web API client.

A 429 pauses its method in its scope — the channel for ``chat.postMessage`` (limited per
channel), the workspace for every other method — for every stream, card and panel at once: a
call to a paused method and scope is not sent, it fails at once with
:class:`~bot.errors.SurfaceRateLimited` and the time left, as the 429 itself did. Whoever made
the call decides what waits (the presenter's budgets, the draft sweeper); nothing sleeps here.

A pause only helps calls made after the 429 was read, so the methods streams call at once
(:data:`ONE_AT_A_TIME`) keep one call per method and scope in flight (:class:`Lanes`): the next
post to a channel is sent once the previous one has answered, and sees its 429 instead of
crossing it on the wire. Slack allows about one post a second per channel and 50 edits a minute
per workspace, so waiting one round trip for the call before costs nothing the tiers would give.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from bot.api.kit import Clock
from bot.errors import SurfaceRateLimited

PER_CHANNEL = frozenset({"chat.postMessage"})
"""Methods Slack limits per channel rather than per workspace."""
REMEMBERED = 10_000
"""Pauses kept at most (the ones over are dropped as they end)."""
ONE_AT_A_TIME = frozenset(
    {
        "chat.postMessage",
        "chat.update",
        "chat.delete",
        "chat.startStream",
        "chat.appendStream",
        "chat.stopStream",
    }
)
"""Methods many streams call at once: one call per method and scope in flight."""
LANE_WAIT_S = 5.0
"""How long a call waits for the one before it; a call hanging longer does not hold the rest."""


def scope(method: str, channel: str | None) -> str:
    """The channel for methods Slack limits per channel, the workspace for the others."""
    return (channel or "-") if method in PER_CHANNEL else "workspace"


class Pauses:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._until: dict[tuple[str, str], float] = {}

    def check(self, method: str, channel: str | None) -> None:
        """Raise :class:`SurfaceRateLimited` while ``method`` is paused in this scope."""
        key = (method, scope(method, channel))
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
        key = (method, scope(method, channel))
        self._until[key] = max(self._until.get(key, now), now + retry_after)
        if len(self._until) > REMEMBERED:
            self._until = {k: t for k, t in self._until.items() if t > now}


@dataclass(slots=True)
class _Lane:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


class Lanes:
    """One call in flight per method and scope, for the methods in :data:`ONE_AT_A_TIME`."""

    def __init__(self, wait_s: float = LANE_WAIT_S) -> None:
        self._wait_s = wait_s
        self._lanes: dict[tuple[str, str], _Lane] = {}

    def __len__(self) -> int:
        return len(self._lanes)

    @asynccontextmanager
    async def turn(self, method: str, channel: str | None) -> AsyncIterator[None]:
        """Held while the call is on the wire; waits at most ``wait_s`` for the one before."""
        if method not in ONE_AT_A_TIME:
            yield
            return
        key = (method, scope(method, channel))
        lane = self._lanes.setdefault(key, _Lane())
        lane.users += 1
        try:
            held = await _acquire(lane.lock, self._wait_s)
            try:
                yield
            finally:
                if held:
                    lane.lock.release()
        finally:
            lane.users -= 1
            if lane.users == 0:
                del self._lanes[key]


async def _acquire(lock: asyncio.Lock, wait_s: float) -> bool:
    """Take ``lock`` within ``wait_s``; False (go ahead without it) when that ran out."""
    try:
        await asyncio.wait_for(lock.acquire(), wait_s)
    except TimeoutError:
        return False
    return True
