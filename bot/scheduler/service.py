"""The scheduler service: runs the store's due jobs. It never sleeps; a timer calls it.

``run_due()`` is what the timer (``bot.scheduler.timer``) calls when the next job is due; tests
call it directly after moving a fake clock.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from bot.infra.clock import Clock
from bot.scheduler.jobs import Job
from bot.scheduler.store import JobStore

log = logging.getLogger(__name__)

Handler = Callable[[Job], Awaitable[float | None]]
"""Runs a job. It may return when to run the job again (a job whose times are computed, such
as a cron schedule's); None: a one-off job is done, a repeating one follows its interval."""
MAX_ATTEMPTS = 8
RETRY_BASE_S = 10.0
RETRY_CAP_S = 3600.0
CLAIM_S = 300.0
"""A claimed job is not handed to another worker for this long (it runs again after it only if
its worker died while running it)."""


def retry_delay(attempts: int) -> float:
    """Seconds before a failed job runs again."""
    return float(min(RETRY_CAP_S, RETRY_BASE_S * 2 ** max(0, attempts - 1)))


class Scheduler:
    def __init__(self, store: JobStore, clock: Clock) -> None:
        self._store = store
        self._clock = clock
        self._handlers: dict[str, Handler] = {}
        self._listeners: list[Callable[[float], None]] = []

    def handle(self, kind: str, handler: Handler) -> None:
        self._handlers[kind] = handler

    def on_scheduled(self, listener: Callable[[float], None]) -> None:
        """``listener(due_at)`` is told of every job scheduled (the timer re-arms if sooner)."""
        self._listeners.append(listener)

    async def schedule(self, job: Job) -> None:
        await self._store.put_job(job)
        self.notify(job.due_at)

    def notify(self, due_at: float) -> None:
        """Tell the timer of a job due at ``due_at`` that was stored some other way."""
        for listener in self._listeners:
            listener(due_at)

    async def cancel(self, job_id: str) -> None:
        await self._store.delete_job(job_id)

    async def next_due(self) -> float | None:
        return await self._store.next_due()

    async def run_due(self) -> int:
        """Run every job due now that no other worker claimed; returns how many ran
        (successfully or not)."""
        now = self._clock.now()
        jobs = await self._store.claim_due_jobs(now, CLAIM_S)
        for job in jobs:
            await self._run(job, now)
        return len(jobs)

    async def _run(self, job: Job, now: float) -> None:
        handler = self._handlers.get(job.kind)
        try:
            if handler is None:
                raise LookupError(f"no handler for jobs of kind {job.kind!r}")
            again = await handler(job)
        except Exception as exc:
            job.attempts += 1
            job.last_error = f"{type(exc).__name__}: {exc}"[:500]
            if job.attempts >= MAX_ATTEMPTS and job.interval_s is None:
                log.error(
                    "job %s failed %d times; dropping it: %s", job.id, job.attempts, job.last_error
                )
                await self._store.delete_job(job.id)
                return
            log.warning("job %s failed (attempt %d): %s", job.id, job.attempts, job.last_error)
            job.due_at = now + retry_delay(job.attempts)
            await self._store.put_job(job)
            return
        if again is not None:
            job.attempts, job.last_error, job.due_at = 0, None, again
            await self._store.put_job(job)
        elif job.interval_s is None:
            await self._store.delete_job(job.id)
        else:
            job.attempts, job.last_error = 0, None
            job.due_at = max(job.due_at + job.interval_s, now)
            await self._store.put_job(job)
