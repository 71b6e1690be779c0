"""The SQLite store on a real file: what only SQLite does (migrations, a failed write, corruption,
WAL). What every store does is in ``test_contract.py``."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from bot.api.inbound import ThreadKey
from bot.errors import StoreError
from bot.llm.messages import UserMessage
from bot.storage.sqlite.store import SqliteStore, migrations

KEY = ThreadKey("test:c1:t1")


@pytest.fixture
async def store(tmp_path: Path) -> SqliteStore:
    s = SqliteStore(tmp_path / "data" / "t.sqlite3")
    await s.open()
    yield s  # type: ignore[misc]
    await s.close()


async def reopened(store: SqliteStore) -> SqliteStore:
    await store.close()
    again = SqliteStore(store.path)
    await again.open()
    return again


async def test_a_failed_write_changes_nothing(store: SqliteStore) -> None:
    session = await store.load_session(KEY, 0.0)
    await store.append_messages(session, [UserMessage(text="one")])
    session.messages.pop()  # make the next append reuse seq 0: the insert fails
    with pytest.raises(sqlite3.IntegrityError):
        await store.append_messages(session, [UserMessage(text="two"), UserMessage(text="three")])
    again = await store.load_session(KEY, 0.0)
    assert [m.text for m in again.messages] == ["one"]  # type: ignore[union-attr]


async def test_migrations_are_recorded_and_reopen_is_idempotent(store: SqliteStore) -> None:
    newest = migrations()[-1][0]
    assert await store.schema_version() == newest
    store = await reopened(store)
    try:
        assert await store.schema_version() == newest
    finally:
        await store.close()


async def test_a_newer_schema_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite3"
    store = SqliteStore(path)
    await store.open()
    async with store.transaction() as db:
        await db.execute("INSERT INTO schema_migrations VALUES (9999, 'future', 'now')")
    await store.close()
    with pytest.raises(StoreError, match="newer than this Threadline knows"):
        await SqliteStore(path).open()


async def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite3"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot use the database"):
        await SqliteStore(path).open()


async def test_a_corrupt_session_row_is_a_store_error(store: SqliteStore) -> None:
    session = await store.load_session(KEY, 0.0)
    await store.append_messages(session, [UserMessage(text="x")])
    async with store.transaction() as db:
        await db.execute('UPDATE messages SET body = \'{"role": "nope"}\'')
    with pytest.raises(StoreError, match="unreadable"):
        await store.load_session(KEY, 0.0)


async def test_wal_is_on(store: SqliteStore) -> None:
    async with store.db.execute("PRAGMA journal_mode") as cur:
        row = await cur.fetchone()
    assert row is not None and row[0] == "wal"


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


async def test_the_database_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    umask = os.umask(0o022)  # the usual umask would make new files 644 and directories 755
    try:
        store = SqliteStore(tmp_path / "data" / "t.sqlite3")
        await store.open()
        await store.append_messages(
            await store.load_session(KEY, 1.0), [UserMessage(text="secret plans")]
        )
        wal, shm = (store.path.with_name(store.path.name + suffix) for suffix in ("-wal", "-shm"))
        assert wal.exists() and shm.exists()
        assert [mode(p) for p in (store.path.parent, store.path, wal, shm)] == [
            0o700,
            0o600,
            0o600,
            0o600,
        ]
        await store.close()

        older = tmp_path / "older.sqlite3"  # made by an earlier version, open to everyone
        older.touch(mode=0o644)
        again = SqliteStore(older)
        await again.open()
        await again.close()
        assert mode(older) == 0o600
    finally:
        os.umask(umask)
