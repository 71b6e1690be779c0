"""People's display names, looked up once with ``users.info`` and kept in a bounded cache.

A name is kept for ``ttl`` seconds (renames show up eventually) in a least-recently-used cache
of ``capacity`` entries. Concurrent lookups of one user share one call. When Slack cannot answer
(rate limited, missing ``users:read``), the user id stands in for a short while.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from bot.clock import Clock
from bot.errors import SurfaceError

log = logging.getLogger(__name__)

Lookup = Callable[[str], Awaitable[dict[str, Any]]]
CAPACITY = 5000
TTL_S = 6 * 3600.0
FAILED_TTL_S = 60.0
NAME_CHARS = 80


def display_name(user: dict[str, Any], fallback: str) -> str:
    """The name Slack shows for ``user`` (a ``users.info`` user object)."""
    raw = user.get("profile")
    profile: dict[str, Any] = raw if isinstance(raw, dict) else {}
    for candidate in (
        profile.get("display_name"),
        profile.get("real_name"),
        user.get("real_name"),
        user.get("name"),
    ):
        if isinstance(candidate, str) and candidate.strip():
            name = " ".join(candidate.split())  # no newlines or tabs in a speaker's name
            return name[:NAME_CHARS]
    return fallback


class DisplayNames:
    def __init__(self, lookup: Lookup, clock: Clock, *, capacity: int = CAPACITY, ttl: float = TTL_S):
        self._lookup = lookup
        self._clock = clock
        self._capacity = capacity
        self._ttl = ttl
        self._cache: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self._pending: dict[str, asyncio.Future[str]] = {}

    def __len__(self) -> int:
        return len(self._cache)

    async def name(self, user_id: str) -> str:
        hit = self._cache.get(user_id)
        if hit is not None and hit[1] > self._clock.monotonic():
            self._cache.move_to_end(user_id)
            return hit[0]
        pending = self._pending.get(user_id)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._pending[user_id] = future
        name, ttl = user_id, FAILED_TTL_S
        try:
            name, ttl = display_name(await self._lookup(user_id), user_id), self._ttl
        except SurfaceError as exc:
            log.info("could not look up the name of %s: %s", user_id, exc)
        finally:
            self._remember(user_id, name, ttl)
            del self._pending[user_id]
            future.set_result(name)
        return name

    def _remember(self, user_id: str, name: str, ttl: float) -> None:
        self._cache[user_id] = (name, self._clock.monotonic() + ttl)
        self._cache.move_to_end(user_id)
        while len(self._cache) > self._capacity:
            self._cache.popitem(last=False)
