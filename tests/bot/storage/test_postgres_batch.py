"""The PostgreSQL store's gathered statements (``bot/storage/postgres/batch.py``): calls made at
once go as one batch, and each caller still gets its own outcome, as if it had gone alone."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

import pytest

from bot.api.inbound import ThreadKey
from bot.errors import LeaseLost, StoreError
from bot.infra import metrics
from bot.llm.messages import AssistantMessage, UserMessage
from bot.memory.model import Memory
from bot.scheduler.schedules import Schedule
from bot.storage.leases import Lease
from bot.storage.postgres.store import PostgresStore
from tests.bot.storage.test_postgres import until_waiting_on_a_lock
from tests.postgres import fresh_schema

KEYS = [ThreadKey(f"test:c1:t{n}") for n in range(6)]
T = TypeVar("T")


@pytest.fixture
async def url(postgres_database: str) -> str:
    return await fresh_schema(postgres_database)


@pytest.fixture
async def pair(url: str) -> AsyncIterator[tuple[PostgresStore, PostgresStore]]:
    """Two workers' stores on one database."""
    a, b = PostgresStore(url), PostgresStore(url)
    await a.open()
    await b.open()
    yield a, b
    await a.close()
    await b.close()


def sample(name: str) -> float:
    return metrics.REGISTRY.get_sample_value(name, {"statement": "load_session"}) or 0.0


def message(n: int, event_id: str | None = None) -> UserMessage:
    return UserMessage(text=f"message {n}", author_id="U1", author_name="Alice", event_id=event_id)


async def test_calls_made_at_once_take_one_round_trip_and_each_gets_its_own_answer(
    pair: tuple[PostgresStore, PostgresStore],
) -> None:
    store, _ = pair
    for n, key in enumerate(KEYS[:5]):
        session = await store.load_session(key, 1.0)
        await store.append_messages(session, [message(n)])
    calls, trips = store.round_trips
    counted = [sample("threadline_store_calls_total"), sample("threadline_store_round_trips_total")]
    missing = ThreadKey("test:c1:none")
    loaded = await asyncio.wait_for(
        asyncio.gather(*(store.load_session(k, 2.0) for k in [*KEYS[:5], missing])), 10
    )
    assert store.round_trips == (calls + 6, trips + 1)
    assert sample("threadline_store_calls_total") == counted[0] + 6  # what /metrics shows
    assert sample("threadline_store_round_trips_total") == counted[1] + 1
    for n, session in enumerate(loaded[:5]):
        assert session.key == KEYS[n]
        assert [m.text for m in session.messages if isinstance(m, UserMessage)] == [f"message {n}"]
    assert loaded[5].key == missing and loaded[5].messages == [] and loaded[5].created_at == 2.0


async def test_each_statement_of_a_run_answers_a_batch_at_once_and_each_caller_its_own(
    pair: tuple[PostgresStore, PostgresStore],
) -> None:
    """Take, renew and release a lease, is-arrival, a thread's schedules and memories: one
    statement over arrays for a batch, and each caller's own answer (found, or not)."""
    a, b = pair
    assert await b.take_lease(KEYS[2], "worker-b", 60.0) is not None

    async def batch(*calls: Awaitable[T]) -> list[T]:
        _, trips = a.round_trips
        answers = await asyncio.wait_for(asyncio.gather(*calls), 10)
        assert a.round_trips[1] == trips + 1
        return answers

    taken = await batch(*(a.take_lease(k, "worker-a", 60.0) for k in KEYS[:3]))
    assert [lease and (lease.key, lease.owner) for lease in taken] == [
        (KEYS[0], "worker-a"),
        (KEYS[1], "worker-a"),
        None,
    ]
    mine = [lease for lease in taken if lease is not None]
    stale = dataclasses.replace(mine[1], token=mine[1].token - 1)
    renewed = await batch(a.renew_lease(mine[0], 90.0), a.renew_lease(stale, 90.0))
    assert (
        renewed[0] is not None
        and renewed[0].token == mine[0].token
        and renewed[0].expires_at > mine[0].expires_at
    )
    assert renewed[1] is None
    not_mine = Lease(KEYS[2], "worker-a", mine[1].token, 0.0)  # b holds that thread
    assert await batch(
        a.release_lease(mine[0]), a.release_lease(mine[1]), a.release_lease(not_mine)
    ) == [True, True, False]
    assert (await b.lease_of(KEYS[2])).owner == "worker-b"  # type: ignore[union-attr]

    assert await a.accept(KEYS[0], message(0, "Ev0"), 1.0)
    assert await batch(a.is_arrival("Ev0"), a.is_arrival("Ev-none")) == [True, False]

    for n, (key, channel) in enumerate([(KEYS[0], "c1"), (KEYS[0], "c1"), (KEYS[1], "c1")]):
        draft = Schedule(
            "",
            key,
            channel,
            f"prompt {n}",
            "in an hour",
            None,
            "UTC",
            100.0 - n,
            "U1",
            "Alice",
            1.0,
        )
        assert isinstance(await a.add_schedule(draft, per_thread=10, per_channel=10), Schedule)
        note = Memory("", channel, key, "thread", f"note {n}", "U1", "Alice", 1.0)
        assert await a.add_memory(note, per_channel=10) is not None
    schedules = await batch(*(a.schedules_of(k) for k in KEYS[:3]))
    assert [[s.prompt for s in found] for found in schedules] == [
        ["prompt 1", "prompt 0"],
        ["prompt 2"],
        [],
    ]
    memories = await batch(a.recent_memories("c1", KEYS[0], 1), a.recent_memories("c1", KEYS[1], 5))
    assert [[m.note for m in found] for found in memories] == [["note 1"], ["note 2"]]


async def test_a_batch_of_fenced_appends_is_one_statement_and_stores_each_thread_s_own(
    pair: tuple[PostgresStore, PostgresStore],
) -> None:
    a, b = pair
    for n, key in enumerate(KEYS[:4]):  # each thread: a message accepted, waiting for its session
        assert await a.accept(key, message(n, f"Ev{n}"), 1.0)
    leases = [await a.take_lease(k, "worker-a", 60.0) for k in KEYS[:4]]
    writers = [a.sessions_under(lease) for lease in leases if lease is not None]
    sessions = [await w.load_session(k, 1.0) for w, k in zip(writers, KEYS, strict=False)]
    await writers[3].append_messages(sessions[3], [message(9)])  # one holds a message already
    _, trips = a.round_trips
    await asyncio.wait_for(
        asyncio.gather(
            *(
                w.append_messages(s, [message(n, f"Ev{n}"), AssistantMessage(text=f"answer {n}")])
                for n, (w, s) in enumerate(zip(writers, sessions, strict=True))
            )
        ),
        10,
    )
    assert a.round_trips[1] == trips + 1
    for n, key in enumerate(KEYS[:4]):
        stored = await b.load_session(key, 2.0)
        texts = [m.text for m in stored.messages if isinstance(m, UserMessage | AssistantMessage)]
        assert texts == [*(["message 9"] if n == 3 else []), f"message {n}", f"answer {n}"]
    assert await b.arrivals() == []  # the messages the sessions hold are no longer waiting


async def test_a_batch_of_fenced_writes_with_one_lease_lost_refuses_only_that_one(
    pair: tuple[PostgresStore, PostgresStore],
) -> None:
    a, b = pair
    leases = [
        await a.take_lease(k, "worker-a", 0.0 if n == 2 else 60.0) for n, k in enumerate(KEYS[:4])
    ]
    assert all(lease is not None for lease in leases)
    assert await b.take_lease(KEYS[2], "worker-b", 60.0) is not None  # a's lease there ran out
    writers = [a.sessions_under(lease) for lease in leases if lease is not None]
    sessions = [await w.load_session(k, 1.0) for w, k in zip(writers, KEYS, strict=False)]
    _, trips = a.round_trips
    outcomes = await asyncio.wait_for(
        asyncio.gather(
            *(
                w.append_messages(s, [message(n)])
                for n, (w, s) in enumerate(zip(writers, sessions, strict=True))
            ),
            return_exceptions=True,
        ),
        10,
    )
    assert [type(o).__name__ for o in outcomes] == ["NoneType", "NoneType", "LeaseLost", "NoneType"]
    assert isinstance(outcomes[2], LeaseLost)
    assert a.round_trips[1] == trips + 1 + 4  # the batch, undone; then each call on its own
    counts = [
        await b.pool.fetchval("SELECT count(*) FROM messages WHERE key = $1", k) for k in KEYS[:4]
    ]
    assert counts == [1, 1, 0, 1]


async def test_two_writes_of_one_thread_in_a_batch_both_land_in_their_order(
    pair: tuple[PostgresStore, PostgresStore],
) -> None:
    a, _ = pair
    leases = [await a.take_lease(k, "worker-a", 60.0) for k in KEYS[:3]]
    writers = [a.sessions_under(lease) for lease in leases if lease is not None]
    sessions = [await w.load_session(k, 1.0) for w, k in zip(writers, KEYS, strict=False)]
    first, second = (
        dataclasses.replace(sessions[0], day="first"),
        dataclasses.replace(sessions[0], day="second"),
    )
    _, trips = a.round_trips
    await asyncio.wait_for(
        asyncio.gather(  # a steered message saved while the run saves: one thread twice in a batch
            writers[0].save_state(first),
            writers[1].save_state(sessions[1]),
            writers[0].save_state(second),
            writers[2].save_state(sessions[2]),
        ),
        10,
    )
    assert (
        a.round_trips[1] == trips + 2
    )  # in rounds: each thread's first write at once, then the second
    assert (await a.load_session(KEYS[0], 2.0)).day == "second"  # the later write is the last
    assert [await a.has_session(k) for k in KEYS[:3]] == [True, True, True]


async def test_one_delivery_accepted_twice_in_one_batch_is_accepted_once(
    pair: tuple[PostgresStore, PostgresStore],
) -> None:
    store, _ = pair
    _, trips = store.round_trips
    accepted = await asyncio.wait_for(
        asyncio.gather(
            store.accept(KEYS[0], message(1, "Ev1"), 1.0),
            store.accept(KEYS[1], message(2, "Ev2"), 1.0),
            store.accept(KEYS[0], message(1, "Ev1"), 1.0),  # the platform's retry, at once
        ),
        10,
    )
    assert store.round_trips[1] == trips + 2  # in rounds: each delivery id once in a statement
    assert sorted(accepted) == [False, True, True] and accepted[1] is True
    assert [(k, m.event_id) for k, m in await store.arrivals()] == [
        (KEYS[0], "Ev1"),
        (KEYS[1], "Ev2"),
    ]


async def test_two_workers_taking_the_same_leases_at_once_in_opposite_orders_each_lease_has_one_holder(
    pair: tuple[PostgresStore, PostgresStore],
) -> None:
    a, b = pair
    keys = [ThreadKey(f"test:c2:t{n:02}") for n in range(40)]
    taken_a, taken_b = await asyncio.wait_for(
        asyncio.gather(
            asyncio.gather(*(a.take_lease(k, "worker-a", 60.0) for k in keys)),
            asyncio.gather(*(b.take_lease(k, "worker-b", 60.0) for k in reversed(keys))),
        ),
        20,
    )
    holders = {
        k: lease.owner for lease in [*taken_a, *taken_b] if lease is not None for k in [lease.key]
    }
    assert len([x for x in [*taken_a, *taken_b] if x is not None]) == len(keys)
    assert set(holders) == set(keys)
    for k in keys:
        assert (await a.lease_of(k)).owner == holders[k]  # type: ignore[union-attr]


async def test_a_caller_cancelled_before_its_batch_is_sent_writes_nothing(
    pair: tuple[PostgresStore, PostgresStore],
) -> None:
    store, other = pair
    async with other.transaction() as db:  # holds Ev1's delivery row: the first accept waits
        await db.execute("INSERT INTO deliveries (event_id, seen_at) VALUES ('Ev1', 1.0)")
        first = asyncio.ensure_future(store.accept(KEYS[0], message(1, "Ev1"), 1.0))
        await until_waiting_on_a_lock(other, "INSERT INTO deliveries")
        second = asyncio.ensure_future(store.accept(KEYS[1], message(2, "Ev2"), 1.0))
        await asyncio.sleep(0)  # one turn of the loop: the second call is made (tasks run in order)
        assert store.round_trips == (2, 1)  # and waits for the first one's batch to end
        second.cancel()
        await db.execute("ROLLBACK AND CHAIN")  # Ev1's row goes: the first accept goes on
    assert await asyncio.wait_for(first, 10) is True
    with pytest.raises(asyncio.CancelledError):
        await second
    assert [m.event_id for _, m in await store.arrivals()] == ["Ev1"]
    assert await store.accept(KEYS[1], message(2, "Ev2"), 2.0) is True  # never taken: still new


async def test_a_call_on_a_closed_store_fails_at_once(url: str) -> None:
    store = PostgresStore(url)
    await store.open()
    await store.close()
    with pytest.raises(StoreError, match="not open"):
        await asyncio.wait_for(asyncio.gather(*(store.load_session(k, 1.0) for k in KEYS)), 5)
