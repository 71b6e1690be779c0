"""The timer that wakes the scheduler service: APScheduler 3.x, and nothing else of it.

One APScheduler date job, re-armed after every wake for the store's next due time (and at least
every ``max_wait`` seconds, so jobs another process added are found). The jobs themselves live
in our own table.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.date import DateTrigger

from bot.infra.clock import Clock
from bot.scheduler.service import Scheduler

log = logging.getLogger(__name__)
WAKE = "threadline-wake"
RETRY_S = 5.0
"""After a wake that could not read the next due time (the store away), wake again this soon."""


class Timer:
    def __init__(
        self, service: Scheduler, clock: Clock, *, max_wait: float = 60.0, retry_s: float = RETRY_S
    ) -> None:
        self._service = service
        self._clock = clock
        self._max_wait = max_wait
        self._retry_s = retry_s
        self._aps: AsyncIOScheduler | None = None
        self._armed_for: float | None = None
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        self._aps = AsyncIOScheduler(timezone=UTC)
        self._aps.start()
        self._service.on_scheduled(self._sooner)
        await self._wake()

    async def stop(self) -> None:
        if self._aps is not None:
            self._aps.shutdown(wait=False)
            self._aps = None

    async def settled(self) -> None:
        """Return once a wake in progress (running jobs) has finished."""
        async with self._lock:
            return

    def _sooner(self, due_at: float) -> None:
        if self._armed_for is None or due_at < self._armed_for:
            self._arm(due_at)

    def _arm(self, due_at: float) -> None:
        if self._aps is None:
            return
        self._armed_for = due_at
        when = datetime.fromtimestamp(max(due_at, self._clock.now()), UTC)
        self._aps.add_job(
            self._wake,
            trigger=DateTrigger(run_date=when + timedelta(milliseconds=5)),
            id=WAKE,
            replace_existing=True,
            misfire_grace_time=None,
        )

    async def _wake(self) -> None:
        async with self._lock:
            try:
                await self._service.run_due()
            except Exception:
                log.exception("running scheduled jobs failed")
            limit = self._clock.now() + self._max_wait
            try:
                due = await self._service.next_due()
            except Exception as exc:  # the store away: never left unarmed
                log.warning(
                    "cannot read when the next job is due (trying again in %.1f s): %s",
                    self._retry_s,
                    exc,
                )
                due = self._clock.now() + self._retry_s
            self._arm(limit if due is None else min(due, limit))
