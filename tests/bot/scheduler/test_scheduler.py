"""The scheduler service on a fake clock, and the APScheduler timer that wakes it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.infra.clock import ManualClock, SystemClock
from bot.scheduler.jobs import Job
from bot.scheduler.service import Scheduler, retry_delay
from bot.scheduler.timer import Timer
from bot.storage.sqlite.store import SqliteStore


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    s = SqliteStore(tmp_path / "t.sqlite3")
    await s.open()
    yield s
    await s.close()


async def test_jobs_run_when_due_once_or_repeatedly(store: SqliteStore) -> None:
    clock = ManualClock(start=1000.0)
    scheduler = Scheduler(store, clock)
    ran: list[str] = []

    async def record(job: Job) -> None:
        ran.append(job.id)

    scheduler.handle("k", record)
    await scheduler.schedule(Job("once", "k", 1010.0))
    await scheduler.schedule(Job("every", "k", 1005.0, interval_s=10.0))
    assert await scheduler.run_due() == 0
    await clock.advance(6)
    assert await scheduler.run_due() == 1 and ran == ["every"]
    await clock.advance(10)
    await scheduler.run_due()
    assert sorted(ran) == ["every", "every", "once"]
    assert await scheduler.next_due() == 1025.0  # the repeating job only
    await clock.advance(10)
    await scheduler.run_due()
    assert ran.count("once") == 1


async def test_a_failing_job_is_retried_with_backoff_and_survives_a_restart(
    store: SqliteStore, tmp_path: Path
) -> None:
    clock = ManualClock(start=0.0)
    scheduler = Scheduler(store, clock)
    calls = 0

    async def flaky(job: Job) -> None:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise RuntimeError("not yet")

    scheduler.handle("flaky", flaky)
    await scheduler.schedule(Job("j", "flaky", 0.0, {"x": 1}))
    await scheduler.run_due()
    [job] = await store.due_jobs(1e9)
    assert job.attempts == 1 and job.last_error == "RuntimeError: not yet"
    assert job.due_at == retry_delay(1) and job.payload == {"x": 1}

    await store.close()  # a restart: the job is in the table
    again = SqliteStore(tmp_path / "t.sqlite3")
    await again.open()
    try:
        scheduler = Scheduler(again, clock)
        scheduler.handle("flaky", flaky)
        await clock.advance(retry_delay(1))
        await scheduler.run_due()
        await clock.advance(retry_delay(2))
        await scheduler.run_due()
        assert calls == 3 and await again.next_due() is None
    finally:
        await again.close()
        await store.open()


async def test_a_job_without_handler_is_kept_with_its_error(store: SqliteStore) -> None:
    clock = ManualClock(start=0.0)
    scheduler = Scheduler(store, clock)
    await scheduler.schedule(Job("j", "nobody", 0.0))
    await scheduler.run_due()
    [job] = await store.due_jobs(1e9)
    assert "no handler" in (job.last_error or "")


async def test_the_timer_wakes_the_service_when_a_job_is_due(store: SqliteStore) -> None:
    clock = SystemClock()
    scheduler = Scheduler(store, clock)
    done = asyncio.Event()

    async def fire(job: Job) -> None:
        done.set()

    scheduler.handle("k", fire)
    timer = Timer(scheduler, clock, max_wait=30.0)
    await timer.start()
    try:
        await scheduler.schedule(Job("soon", "k", clock.now() + 0.05))
        await asyncio.wait_for(done.wait(), 5.0)
        await asyncio.wait_for(timer.settled(), 5.0)
    finally:
        await timer.stop()
    assert await store.next_due() is None


async def test_a_handler_may_say_when_its_job_runs_again(store: SqliteStore) -> None:
    clock = ManualClock(start=0.0)
    scheduler = Scheduler(store, clock)
    ran: list[float] = []
    armed: list[float] = []
    scheduler.on_scheduled(armed.append)

    async def computed(job: Job) -> float | None:
        ran.append(clock.now())
        return clock.now() + 100.0 if len(ran) < 2 else None

    scheduler.handle("computed", computed)
    await store.put_job(Job("c", "computed", 10.0))  # stored by someone else: the timer is told
    scheduler.notify(10.0)
    assert armed == [10.0]
    await clock.advance(10)
    await scheduler.run_due()
    assert await store.next_due() == 110.0
    await clock.advance(100)
    await scheduler.run_due()
    assert ran == [10.0, 110.0] and await store.next_due() is None


class AwayStore(SqliteStore):
    """A store whose database is away (restarting) until ``back`` is set: reads fail as they
    would then."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.back = asyncio.Event()
        self.failed = 0

    async def next_due(self) -> float | None:
        if not self.back.is_set():
            self.failed += 1
            raise ConnectionRefusedError(111, "Connect call failed")
        return await super().next_due()

    async def claim_due_jobs(self, now: float, hold_s: float, limit: int = 100) -> list[Job]:
        if not self.back.is_set():
            raise ConnectionRefusedError(111, "Connect call failed")
        return await super().claim_due_jobs(now, hold_s, limit)


async def test_the_timer_keeps_waking_while_the_store_is_away_and_runs_the_job_after(
    tmp_path: Path,
) -> None:
    store = AwayStore(tmp_path / "away.sqlite3")
    await store.open()
    clock = SystemClock()
    scheduler = Scheduler(store, clock)
    done = asyncio.Event()

    async def fire(job: Job) -> None:
        done.set()

    scheduler.handle("k", fire)
    await store.put_job(Job("due", "k", clock.now()))  # due, but the store cannot be read
    timer = Timer(scheduler, clock, max_wait=30.0, retry_s=0.05)
    await timer.start()
    try:
        assert store.failed == 1 and not done.is_set()
        store.back.set()  # the database is back: the next wake (0.05 s later) runs the job
        await asyncio.wait_for(done.wait(), 5.0)
        await asyncio.wait_for(timer.settled(), 5.0)
        assert await store.next_due() is None
    finally:
        await timer.stop()
        await store.close()
