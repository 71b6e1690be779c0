"""One writer per thread: runs of the same thread happen one at a time, in arrival order."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bot.conversation import ThreadKey


class ThreadLocks:
    """A FIFO lock per thread, forgotten when nobody holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[ThreadKey, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, key: ThreadKey) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    def busy(self, key: ThreadKey) -> bool:
        return key in self._locks

    def __len__(self) -> int:
        return len(self._locks)
