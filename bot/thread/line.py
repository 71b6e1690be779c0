"""One writer per thread: work on the same key happens one at a time, in arrival order.

A place in line can be taken without waiting (:meth:`ThreadLocks.reserve`), so an adapter can
hand a message over and know it keeps its place behind the one before it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from types import TracebackType
from typing import Generic, TypeVar

from bot.infra import metrics

K = TypeVar("K", bound=Hashable)


class _Line:
    """The holders of one key, first in line first."""

    __slots__ = ("waiting",)

    def __init__(self) -> None:
        self.waiting: deque[asyncio.Future[None]] = deque()


class Place(Generic[K]):
    """A place in the line of one key; ``async with`` waits for it, then holds the key."""

    def __init__(self, locks: ThreadLocks[K], key: K, ready: asyncio.Future[None]) -> None:
        self._locks = locks
        self._key = key
        self._ready = ready

    async def __aenter__(self) -> None:
        try:
            await asyncio.shield(self._ready)
        except asyncio.CancelledError:
            self._locks._leave(self._key, self._ready)
            raise

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._locks._leave(self._key, self._ready)

    def cancel(self) -> None:
        """Give up the place without ever holding the key."""
        self._locks._leave(self._key, self._ready)


class ThreadLocks(Generic[K]):
    """A FIFO lock per key, forgotten when nobody holds or waits for it."""

    def __init__(self) -> None:
        self._lines: dict[K, _Line] = {}

    def reserve(self, key: K) -> Place[K]:
        """Take the next place in ``key``'s line now; enter the returned place to wait for it."""
        line = self._lines.setdefault(key, _Line())
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if not line.waiting:
            ready.set_result(None)
        else:
            metrics.TURNS_WAITING.inc()
        line.waiting.append(ready)
        return Place(self, key, ready)

    def hold(self, key: K) -> Place[K]:
        """``async with locks.hold(key):`` — wait for the key, then hold it."""
        return self.reserve(key)

    def _leave(self, key: K, ready: asyncio.Future[None]) -> None:
        line = self._lines.get(key)
        if line is None or ready not in line.waiting:
            return
        first = line.waiting[0] is ready
        line.waiting.remove(ready)
        if not ready.done():
            ready.cancel()
            metrics.TURNS_WAITING.dec()  # it left the line before its place came
        if not line.waiting:
            del self._lines[key]
        elif first:
            line.waiting[0].set_result(None)
            metrics.TURNS_WAITING.dec()

    def busy(self, key: K) -> bool:
        return key in self._lines

    def __len__(self) -> int:
        return len(self._lines)
