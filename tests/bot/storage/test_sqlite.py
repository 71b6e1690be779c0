"""The SQLite store on a real file: round trips, atomicity, migrations, dedupe, corruption."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from bot.conversation import ThreadKey
from bot.errors import StoreError
from bot.llm.messages import AssistantMessage, Summary, ToolCall, ToolResult, Usage, UserMessage
from bot.sessions.model import PanelRef, RunState, Todo
from bot.storage.sqlite import SqliteStore, migrations

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


async def test_a_new_thread_has_an_empty_unsaved_session(store: SqliteStore) -> None:
    session = await store.load_session(KEY, 100.0)
    assert session.messages == [] and session.state is RunState.IDLE
    assert session.created_at == 100.0
    assert await store.list_threads("test:") == []
    assert not await store.has_session(KEY)
    await store.append_messages(session, [UserMessage(text="hi")])
    assert await store.has_session(KEY)


async def test_everything_survives_a_reopen(store: SqliteStore) -> None:
    session = await store.load_session(KEY, 1.0)
    call = ToolCall(id="call_1", wire_id="w1", name="todo_write", arguments='{"todos": []}')
    await store.append_messages(
        session,
        [
            UserMessage(text="hello  there\nfriend", author_id="U1", author_name="Alice"),
            AssistantMessage(text="hi", tool_calls=(call,)),
            ToolResult(call_id="call_1", name="todo_write", content="ok"),
        ],
    )
    session.todos = (Todo(content="a", status="in_progress"), Todo(content="b"))
    session.usage = Usage(prompt_tokens=10, completion_tokens=5, cached_tokens=2)
    session.cost_usd = 0.25
    session.state = RunState.RUNNING
    session.panel = PanelRef(message_id="M9", content_hash="abc", pinned=True)
    session.updated_at = 5.0
    await store.save_state(session)
    await store.record_posted(KEY, "M1", "reply", 2.0)
    await store.record_posted(KEY, "M9", "panel", 3.0)
    await store.record_posted(KEY, "M1", "reply", 4.0)  # recorded once

    store = await reopened(store)
    try:
        again = await store.load_session(KEY, 99.0)
        assert again.messages == session.messages
        assert again.todos == session.todos
        assert again.usage == session.usage and again.cost_usd == 0.25
        assert again.state is RunState.RUNNING
        assert again.panel == PanelRef(message_id="M9", content_hash="abc", pinned=True)
        assert (again.created_at, again.updated_at) == (1.0, 5.0)
        assert await store.posted(KEY) == ["M1", "M9"]
        assert await store.posted(KEY, "panel") == ["M9"]
        [summary] = await store.list_threads("test:")
        assert summary.title == "hello there friend" and summary.message_count == 3
    finally:
        await store.close()


async def test_replace_messages_is_atomic_and_renumbers(store: SqliteStore) -> None:
    session = await store.load_session(KEY, 0.0)
    await store.append_messages(session, [UserMessage(text=f"m{i}") for i in range(5)])
    await store.replace_messages(session, [Summary(text="earlier", replaced=4), UserMessage(text="m4")])
    await store.append_messages(session, [UserMessage(text="m5")])
    again = await store.load_session(KEY, 0.0)
    assert [getattr(m, "text", "") for m in again.messages] == ["earlier", "m4", "m5"]


async def test_a_failed_write_changes_nothing(store: SqliteStore) -> None:
    session = await store.load_session(KEY, 0.0)
    await store.append_messages(session, [UserMessage(text="one")])
    session.messages.pop()  # make the next append reuse seq 0: the insert fails
    with pytest.raises(sqlite3.IntegrityError):
        await store.append_messages(session, [UserMessage(text="two"), UserMessage(text="three")])
    again = await store.load_session(KEY, 0.0)
    assert [m.text for m in again.messages] == ["one"]  # type: ignore[union-attr]


async def test_concurrent_appends_to_different_threads_all_land(store: SqliteStore) -> None:
    async def talk(n: int) -> None:
        session = await store.load_session(ThreadKey(f"test:c:{n}"), 0.0)
        for i in range(10):
            await store.append_messages(session, [UserMessage(text=f"{n}-{i}")])

    await asyncio.gather(*(talk(n) for n in range(20)))
    threads = await store.list_threads("test:c:", limit=100)
    assert len(threads) == 20 and {t.message_count for t in threads} == {10}


async def test_deliveries_are_deduplicated_and_purged(store: SqliteStore) -> None:
    assert await store.first_delivery("ev1", 10.0)
    assert not await store.first_delivery("ev1", 11.0)
    assert await store.first_delivery("ev2", 20.0)
    store = await reopened(store)
    try:
        assert not await store.first_delivery("ev1", 12.0)  # persisted
        assert await store.purge_deliveries(before=15.0) == 1
        assert await store.first_delivery("ev1", 30.0)
        assert not await store.first_delivery("ev2", 30.0)
    finally:
        await store.close()


async def test_list_threads_filters_by_prefix_literally(store: SqliteStore) -> None:
    for key, at in (("play:a", 1.0), ("play:b", 3.0), ("play_x", 2.0), ("slack:a", 4.0)):
        session = await store.load_session(ThreadKey(key), at)
        await store.append_messages(session, [UserMessage(text=key)])
    assert [t.key for t in await store.list_threads("play:")] == ["play:b", "play:a"]
    assert [t.key for t in await store.list_threads("play:", limit=1)] == ["play:b"]


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
        await db.execute("UPDATE messages SET body = '{\"role\": \"nope\"}'")
    with pytest.raises(StoreError, match="unreadable"):
        await store.load_session(KEY, 0.0)


async def test_wal_is_on(store: SqliteStore) -> None:
    async with store.db.execute("PRAGMA journal_mode") as cur:
        row = await cur.fetchone()
    assert row is not None and row[0] == "wal"
