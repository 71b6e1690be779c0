"""A worker's presence in PostgreSQL: its leases are free the moment the connection holding its
presence ends, but only in the server's life it registered in (after a restart, a crash recovery
or a failover every connection ended at once, and the leases' expiry decides alone)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import asyncpg
import pytest

from bot.api.inbound import ThreadKey
from bot.errors import LeaseLost
from bot.sessions.model import RunState
from bot.storage.postgres.presence import register
from bot.storage.postgres.store import PostgresStore
from tests.postgres import fresh_schema, postgres_database

__all__ = ["postgres_database"]

KEY = ThreadKey("test:c1:t1")
TTL_S = 300.0
"""Longer than any test: a lease taken over in one was freed by its holder's presence."""


@pytest.fixture
def database(postgres_database: str) -> str:
    return postgres_database


@pytest.fixture
async def store(database: str) -> AsyncIterator[PostgresStore]:
    opened = PostgresStore(await fresh_schema(database), pool_size=2)
    await opened.open()
    yield opened
    await opened.close()


async def present(store: PostgresStore, owner: str) -> asyncpg.Connection:
    conn = await asyncpg.connect(store._url)
    await register(conn, owner)
    return conn


async def end(store: PostgresStore, conn: asyncpg.Connection) -> None:
    """Close ``conn`` and wait (at most 10 s) for the server to have ended its session."""
    pid = conn.get_server_pid()
    await conn.close()
    for _ in range(1000):
        if not await store.pool.fetchval("SELECT 1 FROM pg_stat_activity WHERE pid = $1", pid):
            return
        await asyncio.sleep(0.01)
    raise TimeoutError(f"the session of {pid} did not end within 10 s")


async def running(store: PostgresStore, owner: str) -> None:
    """``owner`` holds the thread's lease, its run cut off mid-way as a kill leaves it."""
    lease = await store.take_lease(KEY, owner, TTL_S)
    assert lease is not None
    session = await store.load_session(KEY, time.time())
    session.state = RunState.RUNNING
    await store.sessions_under(lease).save_state(session)


async def test_a_lease_is_free_the_moment_its_holders_presence_ends(store: PostgresStore) -> None:
    a = await present(store, "a")
    await running(store, "a")
    old = await store.lease_of(KEY)
    assert old is not None
    assert await store.take_lease(KEY, "b", TTL_S) is None  # a is there
    assert await store.orphans() == [] and await store.lease_holders([KEY]) == {KEY: "a"}

    await end(store, a)  # a's process died: the kernel closed its connection

    assert await store.orphans() == [KEY]
    assert await store.lease_holders([KEY]) == {}
    taken = await store.take_lease(KEY, "b", TTL_S)
    assert taken is not None and taken.token > old.token
    session = await store.load_session(KEY, time.time())
    with pytest.raises(LeaseLost):  # a's writes are refused from now on
        await store.sessions_under(old).save_state(session)


async def test_a_worker_never_registered_keeps_its_lease_until_it_expires(
    store: PostgresStore,
) -> None:
    await running(store, "a")
    assert await store.take_lease(KEY, "b", TTL_S) is None
    assert await store.orphans() == []


async def test_presence_is_not_believed_after_the_server_s_life_changed(
    store: PostgresStore,
) -> None:
    a = await present(store, "a")
    await running(store, "a")
    # a restart or a crash recovery: every connection ended, a's presence with the others, and
    # the server's life is another (here: the mark of it, as a crash recovery empties it)
    await end(store, a)
    conn = await asyncpg.connect(store._url)
    try:
        await conn.execute("DELETE FROM server_life")
        assert await store.take_lease(KEY, "b", TTL_S) is None  # only the expiry frees it now
        assert await store.orphans() == []
        b = await present(store, "b")  # the first worker back marks the new life
        assert await store.take_lease(KEY, "b", TTL_S) is None
        await conn.execute("UPDATE leases SET expires_at = clock_timestamp()")
        assert await store.take_lease(KEY, "b", TTL_S) is not None
        await end(store, b)
    finally:
        await conn.close()


async def test_a_worker_registering_again_is_present_again_and_the_gone_are_forgotten(
    store: PostgresStore,
) -> None:
    a = await present(store, "a")
    await running(store, "a")
    c = await present(store, "c")  # c holds no lease
    await end(store, c)
    await end(store, a)
    await store.pool.execute(  # a worker of an earlier life of the server, holding no lease
        "INSERT INTO workers (owner, lock, life, since) VALUES ('old', 7, 0, clock_timestamp())"
    )
    a = await present(store, "a")  # a's connection was cut, a lives: it registers again
    try:
        assert await store.take_lease(KEY, "b", TTL_S) is None
        assert await store.orphans() == []
        conn = await asyncpg.connect(store._url)
        try:
            owners = {r["owner"] for r in await conn.fetch("SELECT owner FROM workers")}
        finally:
            await conn.close()
        assert owners == {"a"}  # c, gone with nothing held, and the old one forgotten
    finally:
        await end(store, a)
