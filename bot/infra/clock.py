"""Time, injected: the system clock in production, a manual clock in tests."""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (wall time, for timestamps that are stored)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (for intervals)."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class ManualClock:
    """A clock that moves only when a test calls :meth:`advance`.

    ``sleep`` parks the caller until the clock has been advanced past its deadline,
    so tests exercise time-based behaviour without waiting.
    """

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start
        self._mono = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._mono + seconds, next(self._seq), fut))
        await fut

    @property
    def sleepers(self) -> int:
        return sum(1 for *_, f in self._sleepers if not f.done())

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking every sleeper whose deadline has passed, in order."""
        target = self._mono + seconds
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, fut = heapq.heappop(self._sleepers)
            step = deadline - self._mono
            self._mono = deadline
            self._now += step
            if not fut.done():
                fut.set_result(None)
            # let the woken task run before the next deadline
            for _ in range(5):
                await asyncio.sleep(0)
        self._now += target - self._mono
        self._mono = target
        for _ in range(5):
            await asyncio.sleep(0)


async def sleep_until_set(clock: Clock, seconds: float, event: asyncio.Event) -> bool:
    """Sleep ``seconds`` on ``clock``, or less if ``event`` is set first; True when it was."""
    if event.is_set():
        return True
    sleeper = asyncio.ensure_future(clock.sleep(seconds))
    setter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait((sleeper, setter), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (sleeper, setter):
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    return event.is_set()
