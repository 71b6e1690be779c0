"""Answers of a Web API lookup, kept for a while (display names, user group members).

An answer is kept for ``ttl`` seconds, a failure's stand-in for ``failed_ttl`` (asked again
sooner), in a least-recently-used cache of ``capacity`` entries. Concurrent lookups of one key
share one call.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from bot.api.kit import Clock
from bot.errors import SurfaceError

V = TypeVar("V")


class KeptLookups(Generic[V]):
    def __init__(
        self,
        lookup: Callable[[str], Awaitable[V]],
        failed: Callable[[str, SurfaceError], V],
        clock: Clock,
        *,
        ttl: float,
        failed_ttl: float,
        capacity: int,
    ) -> None:
        """``failed(key, error)`` is the stand-in answer when the lookup raised."""
        self._lookup = lookup
        self._failed = failed
        self._clock = clock
        self._ttl = ttl
        self._failed_ttl = failed_ttl
        self._capacity = capacity
        self._cache: OrderedDict[str, tuple[V, float]] = OrderedDict()
        self._pending: dict[str, asyncio.Future[V]] = {}

    def __len__(self) -> int:
        return len(self._cache)

    async def get(self, key: str) -> V:
        hit = self._cache.get(key)
        if hit is not None and hit[1] > self._clock.monotonic():
            self._cache.move_to_end(key)
            return hit[0]
        pending = self._pending.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[V] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            value, ttl = await self._lookup(key), self._ttl
        except SurfaceError as exc:
            value, ttl = self._failed(key, exc), self._failed_ttl
        except BaseException as exc:  # cancelled (shutting down) or a bug: nothing is kept
            del self._pending[key]
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(exc)
                future.exception()  # the waiters, if any, see it; it is raised here too
            raise
        self._remember(key, value, ttl)
        del self._pending[key]
        future.set_result(value)
        return value

    def _remember(self, key: str, value: V, ttl: float) -> None:
        self._cache[key] = (value, self._clock.monotonic() + ttl)
        self._cache.move_to_end(key)
        while len(self._cache) > self._capacity:
            self._cache.popitem(last=False)
