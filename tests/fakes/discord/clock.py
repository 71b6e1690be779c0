"""A clock that runs faster than the wall clock, shared by the fake Discord and the core.

Every timed rule of the platform (rate-limit windows, the 3 s interaction deadline, message
age) and every timed decision of the bot (edit spacing, retry waits) reads the same clock, so a
test sees exactly what a real-time run would, only ``speed`` times sooner.
"""

from __future__ import annotations

import asyncio
import time


class FastClock:
    def __init__(self, speed: float = 10.0, *, start: float = 1_760_000_000.0) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = speed
        self._origin = time.monotonic()
        self._start = start

    def _elapsed(self) -> float:
        return (time.monotonic() - self._origin) * self.speed

    def now(self) -> float:
        return self._start + self._elapsed()

    def monotonic(self) -> float:
        return self._elapsed()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds) / self.speed)
