"""Drafts left behind by a final text that was posted anew, deleted right beside it.

When the edit budget cannot land a final text soon, :class:`~bot.present.reply.ReplyStream`
posts it as a new message and hands the superseded draft here at once. Each ``budget_key`` has
one queue, worked by one owned task, paced by the surface's ``deletes_per_minute`` after a burst
of ``delete_burst`` (so the drafts of a busy moment go within a second of their finals); a 429
pauses the queue for its ``Retry-After`` (and slows the pace, like the edit budget) and the
draft is tried again after it — a rate limit never leaves one behind. A message that is already
gone counts as deleted, and any other failure is logged and the draft left as it is (its
record, kept by the reply, has a restart delete it). With several workers on one store the
deletions of a key are paced with the other workers' (``shared``: an edit budget of its own per
key, :mod:`bot.cluster.shared_rate`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections import deque
from collections.abc import Callable
from typing import Protocol

from bot.api.surface import Surface
from bot.errors import SurfaceError, SurfaceRateLimited
from bot.infra.clock import Clock

log = logging.getLogger(__name__)

MIN_PAUSE_S = 0.05
"""The least a 429 holds the queue back (a Retry-After of 0 is not a busy loop)."""
SLOWER = 1.25
"""How much an unforeseen 429 stretches the interval between deletions."""


class Pacer(Protocol):
    """A budget shared with other workers (an :class:`~bot.present.budget.EditBudget`)."""

    async def acquire(self, owner: object, /) -> bool: ...

    def note_rate_limited(self, retry_after: float) -> None: ...


SharedPacer = Callable[[str, float, int], Pacer | None]
"""The pacer shared with other workers for a key, its rate and burst, None when there is none."""


class _Queue:
    def __init__(
        self,
        clock: Clock,
        deletes_per_minute: float | None,
        burst: int = 1,
        shared: Pacer | None = None,
    ) -> None:
        self.clock = clock
        self.shared = shared
        self.interval = 0.0 if deletes_per_minute is None else 60.0 / deletes_per_minute
        self.room = max(0, burst - 1)
        """Deletions that may go ahead of the steady pace (a burst)."""
        self.next_at = -math.inf
        """When the next deletion would go if they were evenly spaced (GCRA)."""
        self.paused_until = -math.inf
        self.items: deque[tuple[Surface, str]] = deque()
        self.task: asyncio.Task[None] | None = None

    async def _turn(self) -> None:
        """Wait for the next deletion's turn (shared: the other workers' pace)."""
        if self.shared is not None:
            await self.shared.acquire(self)
            return
        ready = max(self.next_at - self.room * self.interval, self.paused_until)
        wait = ready - self.clock.monotonic()
        if wait > 0:
            await self.clock.sleep(wait)
        self.next_at = max(self.next_at, self.clock.monotonic()) + self.interval

    async def work(self) -> None:
        while self.items:
            surface, message_id = self.items[0]
            await self._turn()
            try:
                await surface.delete(message_id)
            except SurfaceRateLimited as exc:
                if self.shared is not None:
                    self.shared.note_rate_limited(exc.retry_after)
                self.interval *= SLOWER
                self.paused_until = self.clock.monotonic() + max(exc.retry_after, MIN_PAUSE_S)
                continue  # the same draft again, after the pause
            except SurfaceError:
                log.warning("could not delete draft %s", message_id, exc_info=True)
            self.items.popleft()


class DraftSweeper:
    """One delete queue per budget key."""

    def __init__(self, clock: Clock, shared: SharedPacer | None = None) -> None:
        self._clock = clock
        self._shared = shared
        self._queues: dict[str, _Queue] = {}
        self._closed = False

    def discard(self, surface: Surface, message_id: str) -> None:
        """Delete ``message_id`` soon, within the surface's delete budget."""
        if self._closed:
            log.info("shutting down: draft %s is left in the thread", message_id)
            return
        limits = surface.limits
        queue = self._queues.get(limits.budget_key)
        if queue is None:
            rate, burst = limits.deletes_per_minute, limits.delete_burst
            shared = None
            if self._shared is not None and rate is not None and limits.workers_share_budget:
                shared = self._shared(f"{limits.budget_key}:delete", rate, burst)
            queue = self._queues[limits.budget_key] = _Queue(self._clock, rate, burst, shared)
        queue.items.append((surface, message_id))
        if queue.task is None or queue.task.done():
            queue.task = asyncio.get_running_loop().create_task(queue.work())

    async def idle(self) -> None:
        """Return once every queued draft has been dealt with."""
        for queue in list(self._queues.values()):
            while queue.task is not None and not queue.task.done():
                await asyncio.shield(queue.task)

    async def aclose(self) -> None:
        """Stop deleting (what is left stays in its thread)."""
        self._closed = True
        for queue in self._queues.values():
            task, queue.task = queue.task, None
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
