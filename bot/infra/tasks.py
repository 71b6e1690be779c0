"""Owned background tasks: every task the program starts is kept here until it ends.

One :class:`TaskSet` per owner (the core, each adapter): ``spawn`` starts a task and keeps it,
a failure is logged with its owner's name, ``idle`` waits for all of them (those started
meanwhile included), and ``drain`` stops taking new work, gives running work a grace period and
cancels the rest.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class TaskSet:
    def __init__(self, owner: str) -> None:
        self._owner = owner
        self._tasks: set[asyncio.Task[Any]] = set()
        self.closed = False
        """After :meth:`drain`: new work is refused (its coroutine closed unrun)."""

    def spawn(
        self, coro: Coroutine[Any, Any, T], *, awaited: bool = False
    ) -> asyncio.Task[T] | None:
        """Run ``coro`` in a kept task; None (and the coroutine closed) once draining.

        A failure is logged, unless ``awaited``: then whoever awaits the task gets it."""
        if self.closed:
            coro.close()
            return None
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if not awaited:
            task.add_done_callback(self._log_failure)
        return task

    def _log_failure(self, task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error("background work of %s failed", self._owner, exc_info=exc)

    def __len__(self) -> int:
        return len(self._tasks)

    async def idle(self) -> None:
        """Return once no task is running (tasks started meanwhile included)."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    async def drain(self, grace: float = 0.0) -> None:
        """Refuse new work, let running tasks finish for up to ``grace`` seconds, cancel the rest."""
        self.closed = True
        if not self._tasks:
            return
        pending: set[asyncio.Task[Any]] = set(self._tasks)
        if grace > 0:
            _, pending = await asyncio.wait(pending, timeout=grace)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
