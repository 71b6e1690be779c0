"""The store contract for scheduled prompts (:class:`bot.scheduler.schedules.ScheduleStore`),
run on every implementation (see ``conftest.py``). Only the Protocols' methods are used."""

from __future__ import annotations

import asyncio
import dataclasses

from bot.api.inbound import ThreadKey
from bot.llm.messages import UserMessage
from bot.scheduler.schedules import PROMPT_JOB, Schedule
from bot.storage.protocol import Store
from tests.bot.storage.conftest import Stores


def draft(key: str = "test:c1:t1", channel: str = "test:c1", **changes: object) -> Schedule:
    base = Schedule(
        "",
        key,
        channel,
        "check the build",
        "in 5 minutes",
        None,
        "UTC",
        1300.0,
        "test:U1",
        "Alice",
        1000.0,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


async def add(
    store: Store, item: Schedule, per_thread: int = 10, per_channel: int = 50
) -> Schedule:
    added = await store.add_schedule(item, per_thread=per_thread, per_channel=per_channel)
    assert isinstance(added, Schedule), added
    return added


async def test_a_schedule_is_stored_with_an_id_and_its_job_and_survives_a_reopen(
    stores: Stores, store: Store
) -> None:
    first = await add(store, draft())
    second = await add(store, draft(cron="0 9 * * 1-5", when="0 9 * * 1-5", next_at=1200.0))
    assert first.id and second.id and first.id != second.id
    assert dataclasses.replace(first, id="") == draft()
    [job_one, job_two] = await store.due_jobs(1e9)
    assert (job_one.kind, job_one.due_at, job_one.payload) == (
        PROMPT_JOB,
        1200.0,
        {"schedule_id": second.id},
    )
    assert (job_two.id, job_two.payload) == (f"prompt:{first.id}", {"schedule_id": first.id})

    store = await stores.reopen(store)
    assert await store.get_schedule(first.id) == first
    assert await store.schedules_of("test:c1:t1") == [second, first]  # the next to run first
    assert await store.schedules_of("test:c1:t2") == []
    assert await store.get_schedule("s999999") is None
    assert await store.get_schedule("not an id") is None


async def test_the_limits_per_thread_and_per_channel_hold(store: Store) -> None:
    for _ in range(2):
        await add(store, draft(), per_thread=2, per_channel=3)
    assert await store.add_schedule(draft(), per_thread=2, per_channel=3) == "thread"
    await add(store, draft(key="test:c1:t2"), per_thread=2, per_channel=3)
    assert (
        await store.add_schedule(draft(key="test:c1:t3"), per_thread=2, per_channel=3) == "channel"
    )
    await add(store, draft(key="test:c2:t1", channel="test:c2"), per_thread=2, per_channel=3)
    assert len(await store.due_jobs(1e9)) == 4  # no job for what was refused


async def test_concurrent_requests_never_pass_a_limit(store: Store) -> None:
    results = await asyncio.gather(
        *(
            store.add_schedule(draft(key=f"test:c1:t{i % 7}"), per_thread=3, per_channel=12)
            for i in range(200)
        )
    )
    assert sum(isinstance(r, Schedule) for r in results) == 12
    for thread in range(7):
        assert len(await store.schedules_of(f"test:c1:t{thread}")) <= 3


async def test_a_run_is_claimed_once(store: Store) -> None:
    once = await add(store, draft())
    claims = await asyncio.gather(*(store.claim_schedule(once.id, 1300.0, None) for _ in range(5)))
    assert claims.count(True) == 1
    assert await store.get_schedule(once.id) is None  # a one-off is gone once claimed

    every = await add(store, draft(cron="*/10 * * * *", next_at=1800.0))
    assert not await store.claim_schedule(every.id, 1300.0, 2400.0)  # not the time it is due
    claims = await asyncio.gather(
        *(store.claim_schedule(every.id, 1800.0, 2400.0) for _ in range(5))
    )
    assert claims.count(True) == 1
    moved = await store.get_schedule(every.id)
    assert moved is not None and moved.next_at == 2400.0
    assert not await store.claim_schedule("s999999", 2400.0, None)


async def test_a_claimed_run_keeps_its_message_as_an_arrival_once(
    stores: Stores, store: Store
) -> None:
    key = ThreadKey("test:c1:t1")
    every = await add(store, draft(cron="*/10 * * * *", next_at=1800.0))
    message = UserMessage(
        text="check the build",
        author_id="test:U1",
        author_name="scheduled by Alice",
        event_id="schedule:s1:1800.000",
    )
    claims = await asyncio.gather(
        *(store.claim_schedule(every.id, 1800.0, 2400.0, (key, message)) for _ in range(5))
    )
    assert claims.count(True) == 1
    assert not await store.claim_schedule(
        every.id, 1800.0, 2400.0, (key, message)
    )  # claimed: nothing kept
    reopened = await stores.reopen(store)  # a restart: the message waits to be answered
    assert await reopened.arrivals() == [(key, message)]
    assert not await reopened.accept(key, message, 1900.0)  # its delivery id is recorded too


async def test_a_schedule_is_deleted_only_from_its_own_thread_with_its_job(store: Store) -> None:
    mine = await add(store, draft())
    other = await add(store, draft(key="test:c1:t2"))
    assert await store.delete_schedule("test:c1:t2", mine.id) is None  # another thread's
    assert await store.delete_schedule("test:c1:t1", "s999999") is None
    assert await store.delete_schedule("test:c1:t1", "garbage") is None
    assert await store.delete_schedule("test:c1:t1", mine.id) == mine
    assert await store.get_schedule(mine.id) is None
    assert [j.payload["schedule_id"] for j in await store.due_jobs(1e9)] == [other.id]
    assert await store.delete_schedule("test:c1:t1", mine.id) is None
