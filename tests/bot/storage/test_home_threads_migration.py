"""The migration that keeps who spoke in which thread fills it from the transcripts already
kept, on SQLite and on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from bot.api.inbound import ThreadKey
from bot.llm.messages import AssistantMessage, UserMessage
from bot.storage.postgres.store import PostgresStore
from bot.storage.postgres.store import migrations as pg_migrations
from bot.storage.protocol import Store
from bot.storage.sqlite.store import SqliteStore
from bot.storage.sqlite.store import migrations as sqlite_migrations
from tests.postgres import fresh_schema


def home_sql(found: list[tuple[int, str, str]]) -> str:
    return next(sql for _, name, sql in found if name == "home_threads")


async def transcripts(store: Store) -> None:
    for key, at, people in (
        ("slack:T1:C1:1", 5.0, [("slack:UA", "Why did\nit fail?"), ("slack:UB", "no idea")]),
        ("slack:T1:C1:2", 7.0, [("slack:UA", "next one"), ("slack:UA", "and again")]),
    ):
        session = await store.load_session(ThreadKey(key), at)
        said = [UserMessage(text=t, author_id=p) for p, t in people]
        await store.append_messages(session, [*said, AssistantMessage(text="ok")])


async def kept(store: Store) -> list[tuple[str, str, float]]:
    return [(t.key, t.title, t.at) for t in await store.threads_of("slack:UA", "slack:T1")]


EXPECTED = [("slack:T1:C1:2", "next one", 7.0), ("slack:T1:C1:1", "Why did it fail?", 5.0)]


async def test_sqlite_fills_the_table_from_the_transcripts(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "t.sqlite3")
    await store.open()
    try:
        await transcripts(store)
        await store.db.execute("DROP TABLE thread_people")
        await store.db.executescript(home_sql(sqlite_migrations()))
        assert await kept(store) == EXPECTED
        assert [t.title for t in await store.threads_of("slack:UB")] == ["no idea"]
    finally:
        await store.close()


async def test_postgres_fills_the_table_from_the_transcripts(postgres_database: str) -> None:
    store = PostgresStore(await fresh_schema(postgres_database))
    await store.open()
    try:
        await transcripts(store)
        async with store.pool.acquire() as db, db.transaction():
            await db.execute("DROP TABLE thread_people")
            await db.execute(home_sql(pg_migrations()))
        assert await kept(store) == EXPECTED
        assert [t.title for t in await store.threads_of("slack:UB")] == ["no idea"]
    finally:
        await store.close()
