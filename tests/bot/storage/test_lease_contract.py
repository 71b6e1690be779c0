"""The lease contract: what every store with leases per thread does (see ``conftest.py``:
``LEASE_IMPLEMENTATIONS``). Each ``workers.open()`` is another worker on the same data."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.api.inbound import ThreadKey
from bot.errors import LeaseLost
from bot.llm.messages import UserMessage
from bot.sessions.model import RunState
from tests.bot.storage.conftest import Stores

KEY = ThreadKey("test:c1:t1")


async def two(workers: Stores) -> tuple[Any, Any]:
    return await workers.open(), await workers.open()


async def test_a_held_lease_is_refused_to_others_and_each_take_gives_a_greater_token(
    workers: Stores,
) -> None:
    a, b = await two(workers)
    first = await a.take_lease(KEY, "worker-a", 60.0)
    assert first is not None and (first.key, first.owner) == (KEY, "worker-a")
    assert await b.take_lease(KEY, "worker-b", 60.0) is None
    again = await a.take_lease(KEY, "worker-a", 60.0)  # its own: taken again, with a new token
    assert again is not None and again.token > first.token
    other = await b.take_lease(ThreadKey("test:c1:t2"), "worker-b", 60.0)  # another thread: free
    assert other is not None and other.token > again.token
    assert await b.lease_of(KEY) == again


async def test_the_expiry_is_on_the_databases_clock(workers: Stores) -> None:
    a, b = await two(workers)
    lease = await a.take_lease(KEY, "worker-a", 60.0)
    renewed = await a.renew_lease(lease, 120.0)
    assert renewed is not None and renewed.token == lease.token
    assert 59.0 < renewed.expires_at - lease.expires_at < 61.0
    assert await b.take_lease(KEY, "worker-b", 60.0) is None  # still held, whatever b's clock says


async def test_after_expiry_another_worker_takes_over_and_the_old_token_writes_nothing(
    workers: Stores,
) -> None:
    a, b = await two(workers)
    old = await a.take_lease(KEY, "worker-a", 0.0)  # expired at once: as if worker-a were paused
    assert old is not None
    writer = a.sessions_under(old)
    session = await writer.load_session(KEY, 1.0)
    await writer.append_messages(session, [UserMessage(text="before")])  # still the newest token
    new = await b.take_lease(KEY, "worker-b", 60.0)
    assert new is not None and new.token > old.token and new.owner == "worker-b"
    assert await a.renew_lease(old, 60.0) is None

    session.state = RunState.RUNNING
    with pytest.raises(LeaseLost):
        await writer.append_messages(session, [UserMessage(text="stale")])
    with pytest.raises(LeaseLost):
        await writer.save_state(session)
    with pytest.raises(LeaseLost):
        await writer.replace_messages(session, [UserMessage(text="rewritten")])
    kept = await b.load_session(KEY, 2.0)
    assert [m.text for m in kept.messages] == ["before"] and kept.state is RunState.IDLE

    taker = b.sessions_under(new)
    await taker.append_messages(kept, [UserMessage(text="after")])
    assert [m.text for m in (await a.load_session(KEY, 3.0)).messages] == ["before", "after"]


async def test_a_released_lease_is_free_at_once_and_its_token_is_stale(workers: Stores) -> None:
    a, b = await two(workers)
    lease = await a.take_lease(KEY, "worker-a", 60.0)
    assert await a.release_lease(lease)
    assert not await a.release_lease(lease)
    with pytest.raises(LeaseLost):
        await a.sessions_under(lease).save_state(await a.load_session(KEY, 1.0))
    assert not await a.has_session(KEY)
    assert await a.renew_lease(lease, 60.0) is None
    taken = await b.take_lease(KEY, "worker-b", 60.0)
    assert taken is not None and taken.token > lease.token


async def test_workers_taking_one_lease_at_once_get_it_exactly_once(workers: Stores) -> None:
    a, b = await two(workers)
    got = await asyncio.gather(
        *(
            store.take_lease(KEY, f"worker-{i}-{n}", 60.0)
            for i in range(10)
            for n, store in enumerate((a, b))
        )
    )
    winners = [lease for lease in got if lease is not None]
    assert len(winners) == 1 and await a.lease_of(KEY) == winners[0]


async def test_a_lease_covers_its_own_thread_only(workers: Stores) -> None:
    (a,) = [await workers.open()]
    lease = await a.take_lease(KEY, "worker-a", 60.0)
    other = await a.load_session(ThreadKey("test:c1:elsewhere"), 1.0)
    with pytest.raises(LeaseLost):
        await a.sessions_under(lease).append_messages(other, [UserMessage(text="x")])
    fenced = a.sessions_under(lease)
    session = await fenced.load_session(KEY, 1.0)
    session.state = RunState.RUNNING
    await fenced.append_messages(session, [UserMessage(text="mine")])
    assert await fenced.has_session(KEY) and await fenced.keys_in_state(RunState.RUNNING) == [KEY]


async def test_a_fenced_append_keeps_who_spoke_and_a_lost_lease_keeps_nothing(
    workers: Stores,
) -> None:
    a, b = await two(workers)
    keys = [ThreadKey(f"slack:T1:C1:{n}") for n in range(3)]
    leases = [await a.take_lease(k, "worker-a", 60.0) for k in keys]
    sessions = [await a.load_session(k, 1.0) for k in keys]
    for n, session in enumerate(sessions):
        session.updated_at = 10.0 + n
    await asyncio.gather(  # gathered into one statement while the first is in flight
        *(
            a.sessions_under(lease).append_messages(
                session,
                [
                    UserMessage(text=f"first {n}", author_id="slack:UA"),
                    UserMessage(text="again", author_id="slack:UA"),
                ],
            )
            for n, (lease, session) in enumerate(zip(leases, sessions, strict=True))
        )
    )
    found = await b.threads_of("slack:UA", "slack:T1")
    assert [(t.key, t.title, t.at) for t in found] == [
        (keys[2], "first 2", 12.0),
        (keys[1], "first 1", 11.0),
        (keys[0], "first 0", 10.0),
    ]
    assert await a.release_lease(leases[0])
    with pytest.raises(LeaseLost):
        await a.sessions_under(leases[0]).append_messages(
            sessions[0], [UserMessage(text="stale", author_id="slack:UB")]
        )
    assert await b.threads_of("slack:UB") == []
