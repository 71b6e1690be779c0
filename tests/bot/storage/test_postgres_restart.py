"""The PostgreSQL store through a restart of its server (a private server, stopped and started):
``problem()`` says the database does not answer while it is down; a write made meanwhile waits
for it and lands once; a write that would wait longer than the store's bound fails plainly."""

from __future__ import annotations

import asyncio
import time

import pytest

from bot.api.inbound import ThreadKey
from bot.llm.messages import UserMessage
from bot.sessions.model import Session
from bot.storage.postgres.store import PostgresStore
from tests.postgres_private import PrivateServer, private_postgres

__all__ = ["private_postgres"]

KEY = ThreadKey("test:c1:t1")
WAIT_S = 30.0


async def test_a_write_during_a_restart_waits_for_the_database_and_lands_once(
    private_postgres: PrivateServer, caplog: pytest.LogCaptureFixture
) -> None:
    store = PostgresStore(private_postgres.url, pool_size=2)
    await store.open()
    try:
        assert await store.problem() is None
        await private_postgres.stop()
        problem = await store.problem()
        assert problem is not None and problem.startswith(
            f"PostgreSQL at {store.where} does not answer"
        )

        session = Session(key=KEY, created_at=time.time(), updated_at=time.time())
        writing = asyncio.ensure_future(store.append_messages(session, [UserMessage(text="kept")]))
        done, _ = await asyncio.wait({writing}, timeout=0.5)
        assert not done  # waiting for the database, not failed
        await private_postgres.start()
        async with asyncio.timeout(WAIT_S):
            await writing
        assert await store.problem() is None
        loaded = await store.load_session(KEY, time.time())
        assert [m.text for m in loaded.messages] == ["kept"]
    finally:
        await store.close()
    assert "is away" in caplog.text and "answers again" in caplog.text


async def test_a_database_down_longer_than_the_wait_fails_the_write_plainly(
    private_postgres: PrivateServer,
) -> None:
    store = PostgresStore(private_postgres.url, pool_size=1, reconnect_wait_s=0.3)
    await store.open()
    try:
        await private_postgres.stop()
        session = Session(key=KEY, created_at=time.time(), updated_at=time.time())
        with pytest.raises(OSError):
            async with asyncio.timeout(WAIT_S):
                await store.append_messages(session, [UserMessage(text="not kept")])
        await private_postgres.start()
        assert (await store.load_session(KEY, time.time())).messages == []  # usable again
    finally:
        await store.close()
