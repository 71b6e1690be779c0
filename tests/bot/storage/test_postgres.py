"""The PostgreSQL store on the local server: what only it does (migrations under an advisory lock,
several processes on one database, a server it cannot reach). What every store does is in
``test_contract.py``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import socket
from collections.abc import AsyncIterator

import asyncpg
import pytest

from bot.api.inbound import ThreadKey
from bot.approvals.models import ApprovalRequest, ApprovalStatus, Approvers
from bot.errors import LeaseLost, StoreError
from bot.llm.messages import UserMessage
from bot.sessions.model import RunState
from bot.storage.postgres.leases import _RELEASE
from bot.storage.postgres.sessions import _LOAD, IN_STATE
from bot.storage.postgres.store import PostgresStore, migrations
from bot.storage.postgres.work import ORPHANS
from tests.postgres import fresh_schema

KEY = ThreadKey("test:c1:t1")


@pytest.fixture
async def url(postgres_database: str) -> str:
    """An empty schema of the test run's database."""
    return await fresh_schema(postgres_database)


@pytest.fixture
async def store(url: str) -> AsyncIterator[PostgresStore]:
    s = PostgresStore(url)
    await s.open()
    yield s
    await s.close()


def closed_port() -> int:
    """A port on loopback where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_workers_starting_together_on_an_empty_database_migrate_it_once(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.storage.postgres.store")
    workers = [PostgresStore(url, pool_size=2) for _ in range(4)]
    await asyncio.gather(*(w.open() for w in workers))
    try:
        applied = [
            r.getMessage()
            for r in caplog.records
            if "applying PostgreSQL migration" in r.getMessage()
        ]
        assert len(applied) == len(migrations())  # each once, by one of the four
        rows = await workers[0].pool.fetch("SELECT version FROM schema_migrations ORDER BY version")
        assert [r["version"] for r in rows] == [v for v, _, _ in migrations()]
        for n, worker in enumerate(workers):  # each one works
            session = await worker.load_session(ThreadKey(f"w{n}"), 0.0)
            await worker.append_messages(session, [UserMessage(text=f"from {n}")])
        assert await workers[0].has_session(ThreadKey("w3"))
    finally:
        await asyncio.gather(*(w.close() for w in workers))


async def test_a_runs_updates_change_no_indexed_column_of_its_session_or_lease(
    store: PostgresStore,
) -> None:
    """A run updates its session row several times and its lease row on every renewal: with no
    index on a column those updates change, they stay in their page (HOT) and add no index
    entries. Sessions are indexed by state only while they are not idle."""
    rows = await store.pool.fetch(
        "SELECT t.relname AS tbl, a.attname AS col, pg_get_expr(i.indpred, i.indrelid) AS only"
        " FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid"
        " JOIN pg_namespace n ON n.oid = t.relnamespace AND n.nspname = current_schema()"
        " JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = ANY(i.indkey)"
        " WHERE t.relname IN ('sessions', 'leases')"
    )
    assert sorted((r["tbl"], r["col"], r["only"]) for r in rows) == [
        ("leases", "key", None),
        ("sessions", "key", None),
        ("sessions", "state", "(state <> 'idle'::text)"),
    ]


@pytest.mark.parametrize("query", [IN_STATE, ORPHANS])
async def test_the_lookups_by_state_use_the_index_in_a_generic_plan(
    store: PostgresStore, query: str
) -> None:
    """A prepared statement's generic plan does not know the state asked for: the query itself
    says it is not idle, or the index (of sessions that are not idle) cannot serve it."""
    args = "'running', 10" if query == IN_STATE else "ARRAY['running', 'resumed'], 10"
    async with store.pool.acquire() as conn, conn.transaction():
        await conn.execute(
            "SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL enable_seqscan = off"
        )
        types = "text, int" if query == IN_STATE else "text[], int"
        await conn.execute(f"PREPARE by_state ({types}) AS {query}")
        try:
            plan = "\n".join(r[0] for r in await conn.fetch(f"EXPLAIN EXECUTE by_state ({args})"))
        finally:
            await conn.execute("DEALLOCATE by_state")
    assert "sessions_active" in plan and "Seq Scan on sessions" not in plan, plan


async def test_a_batch_of_lookups_by_key_reaches_its_rows_through_the_index_on_a_table_of_thousands(
    store: PostgresStore,
) -> None:
    """A batch of 128 keys among 10,000 rows that were never analysed (a busy first day, or a
    server without autovacuum): each row through the index, not the whole table read per batch."""
    await store.pool.execute(
        "INSERT INTO leases (key, owner, token, expires_at) SELECT 'k' || n, 'w', n, now() FROM generate_series(1, 10000) n;"
        " INSERT INTO sessions (key, created_at, updated_at) SELECT 'k' || n, 0, 0 FROM generate_series(1, 10000) n"
    )
    keys = [f"k{n}" for n in range(1, 10000, 77)][:128]
    for statement, args in [(_RELEASE, [(k, "w", 1) for k in keys]), (_LOAD, [(k,) for k in keys])]:
        plan = "\n".join(
            r[0] for r in await store.pool.fetch("EXPLAIN " + statement.sql, *statement.args(args))
        )
        assert "Seq Scan" not in plan and "_pkey" in plan, plan


async def test_the_url_sets_a_server_setting_over_the_store_s_own(url: str) -> None:
    mine = PostgresStore(url)
    theirs = PostgresStore(url + "&random_page_cost=3")
    await mine.open()
    await theirs.open()
    try:
        assert await mine.pool.fetchval("SHOW random_page_cost") == "1.1"
        assert await mine.pool.fetchval("SHOW jit") == "off"
        assert await theirs.pool.fetchval("SHOW random_page_cost") == "3"
        assert await theirs.pool.fetchval("SHOW search_path") == await mine.pool.fetchval(
            "SHOW search_path"
        )
    finally:
        await mine.close()
        await theirs.close()


async def test_reopening_applies_nothing_again(url: str, store: PostgresStore) -> None:
    newest = migrations()[-1][0]
    assert await store.schema_version() == newest
    again = PostgresStore(url)
    await again.open()
    try:
        assert await again.schema_version() == newest
        assert await again.pool.fetchval("SELECT count(*) FROM schema_migrations") == len(
            migrations()
        )
    finally:
        await again.close()


async def test_a_migration_numbered_below_the_newest_applied_is_applied_when_it_comes(
    url: str, store: PostgresStore
) -> None:
    """Branches merged out of order: a database that has 0009 gets 0008 when it ships."""
    await store.pool.execute(
        "DELETE FROM schema_migrations WHERE version = 8; DROP FUNCTION threadline_hold_lease"
    )
    again = PostgresStore(url)
    await again.open()
    try:
        versions = [
            r["version"]
            for r in await again.pool.fetch(
                "SELECT version FROM schema_migrations ORDER BY version"
            )
        ]
        assert versions == [v for v, _, _ in migrations()]
        lease = await again.take_lease(KEY, "worker-a", 60.0)
        assert lease is not None
        writer = again.sessions_under(lease)
        session = await writer.load_session(KEY, 1.0)
        await writer.append_messages(session, [UserMessage(text="fenced by 0008's function")])
        assert len((await again.load_session(KEY, 2.0)).messages) == 1
    finally:
        await again.close()


async def test_a_newer_schema_is_refused_with_a_clear_error(url: str, store: PostgresStore) -> None:
    await store.pool.execute(
        "INSERT INTO schema_migrations (version, name) VALUES (9999, 'future')"
    )
    with pytest.raises(StoreError, match="newer than this Threadline knows"):
        await PostgresStore(url).open()


async def test_a_closed_port_is_a_clear_error_at_once_without_the_password() -> None:
    port = closed_port()
    store = PostgresStore(f"postgresql://bot:hunter2-secret@127.0.0.1:{port}/threadline")
    async with asyncio.timeout(5):
        with pytest.raises(StoreError) as caught:
            await store.open()
    message = str(caught.value)
    assert f"postgresql://bot@127.0.0.1:{port}/threadline" in message
    assert "connection was refused" in message
    assert "hunter2" not in message and caught.value.__cause__ is None


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("/threadline_no_such_db", "the database does not exist"),
        ("/postgres", "the server refused the login"),
    ],
)
async def test_a_missing_database_or_login_is_a_clear_error(
    postgres_database: str, path: str, words: str
) -> None:
    user = "postgres" if "no_such" in path else "nobody_here"
    store = PostgresStore(f"postgresql://{user}:pw-secret-1@127.0.0.1:5432{path}")
    with pytest.raises(StoreError, match=words) as caught:
        await store.open()
    assert "pw-secret-1" not in str(caught.value)


async def test_a_login_that_may_not_create_tables_is_a_clear_error(
    url: str, store: PostgresStore
) -> None:
    role, schema = f"tl_reader_{secrets.token_hex(4)}", url.rsplit("=", 1)[1]
    await store.pool.execute(
        f'CREATE ROLE "{role}" LOGIN; GRANT USAGE ON SCHEMA "{schema}" TO "{role}"'
    )
    try:
        reader = PostgresStore(url.replace("postgres@", f"{role}:pw-secret-4@"))
        with pytest.raises(
            StoreError, match="cannot create or upgrade the tables in .*: permission denied"
        ) as caught:
            await reader.open()
        assert "pw-secret-4" not in str(caught.value)
    finally:
        await store.pool.execute(f'DROP OWNED BY "{role}"; DROP ROLE "{role}"')


async def test_a_schema_that_does_not_exist_is_a_clear_error(url: str) -> None:
    with pytest.raises(
        StoreError, match="cannot create or upgrade the tables in .*: no schema has been selected"
    ):
        await PostgresStore(url.rsplit("=", 1)[0] + "=no_such_schema").open()


async def test_an_unreadable_url_is_a_clear_error() -> None:
    with pytest.raises(StoreError, match="cannot use PostgreSQL") as caught:
        await PostgresStore("postgresql://bot:pw-secret-2@127.0.0.1:notaport/db").open()
    assert "pw-secret-2" not in str(caught.value)


async def test_a_failed_append_changes_neither_the_transcript_nor_the_session(
    store: PostgresStore,
) -> None:
    session = await store.load_session(KEY, 0.0)
    await store.append_messages(session, [UserMessage(text="one")])
    session.messages.pop()  # the next append reuses seq 0: its insert fails
    session.state = RunState.RUNNING
    with pytest.raises(asyncpg.UniqueViolationError):
        await store.append_messages(session, [UserMessage(text="two"), UserMessage(text="three")])
    again = await store.load_session(KEY, 0.0)
    assert [m.text for m in again.messages] == ["one"]  # type: ignore[union-attr]
    assert again.state is RunState.IDLE  # the session row's upsert was undone with it


async def test_a_corrupt_session_row_is_a_store_error(store: PostgresStore) -> None:
    session = await store.load_session(KEY, 0.0)
    await store.append_messages(session, [UserMessage(text="x")])
    await store.pool.execute('UPDATE messages SET body = \'{"role": "nope"}\'')
    with pytest.raises(StoreError, match="unreadable"):
        await store.load_session(KEY, 0.0)


async def test_two_processes_decide_an_approval_and_take_a_delivery_exactly_once(url: str) -> None:
    one, two = PostgresStore(url, pool_size=5), PostgresStore(url, pool_size=5)
    await one.open()
    await two.open()
    try:
        await one.create_approval(
            ApprovalRequest(
                id="a1",
                key=KEY,
                call_id="c1",
                tool="run_command",
                arguments="{}",
                args_hash="h",
                requester_id="u",
                requester_name="U",
                approvers=Approvers(anyone=True),
                created_at=1.0,
                expires_at=100.0,
            )
        )
        wins = await asyncio.gather(
            *(
                worker.decide_approval("a1", choice, f"u{i}", f"U{i}", 5.0)
                for i in range(10)
                for worker, choice in ((one, ApprovalStatus.APPROVED), (two, ApprovalStatus.DENIED))
            )
        )
        assert sum(wins) == 1
        trail = await two.audit_trail()
        assert [e.event for e in trail].count("requested") == 1
        assert len([e for e in trail if e.event in ("approved", "denied")]) == 1
        decided = await two.get_approval("a1")
        assert decided is not None and decided.status.value == trail[-1].event

        firsts = await asyncio.gather(*(w.first_delivery("ev1", 1.0) for w in (one, two) * 5))
        assert sum(firsts) == 1
    finally:
        await one.close()
        await two.close()


async def test_the_pool_grows_to_its_size_and_closing_ends_its_connections(url: str) -> None:
    store = PostgresStore(f"{url}&application_name=tl_pool_test", pool_size=3)
    watcher = PostgresStore(url, pool_size=1)
    await store.open()
    await watcher.open()
    try:
        count = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'tl_pool_test'"
        async with contextlib.AsyncExitStack() as held:  # three transactions at once
            for _ in range(3):
                await held.enter_async_context(store.transaction())
            assert await watcher.pool.fetchval(count) == 3
            assert store.pool.get_idle_size() == 0
        await store.close()
        assert await watcher.pool.fetchval(count) == 0
        with pytest.raises(StoreError, match="not open"):
            await store.has_session(KEY)
    finally:
        await store.close()
        await watcher.close()


async def until_waiting_on_a_lock(store: PostgresStore, statement: str) -> None:
    """Wait (checked every 10 ms, for at most 10 s) until a statement containing ``statement``
    waits on a lock in the server."""
    waiting = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND strpos(query, $1) > 0"
    async with asyncio.timeout(10):
        for _ in range(1000):
            if await store.pool.fetchval(waiting, statement):
                return
            await asyncio.sleep(0.01)


async def test_a_takeover_waits_for_a_fenced_write_in_flight(url: str) -> None:
    from bot.storage.postgres.leases import FencedSessions

    a, b = PostgresStore(url, pool_size=2), PostgresStore(url, pool_size=2)
    await a.open()
    await b.open()
    try:
        lease = await a.take_lease(KEY, "worker-a", 0.0)  # expired: free to take over
        writer = a.sessions_under(lease)
        assert isinstance(writer, FencedSessions)
        session = await a.load_session(KEY, 1.0)
        async with writer.transaction(KEY) as db:  # a write in flight
            await db.execute(
                "INSERT INTO messages (key, seq, body) VALUES ($1, 0, $2)",
                KEY,
                '{"role": "user", "text": "in flight"}',
            )
            taking = asyncio.ensure_future(b.take_lease(KEY, "worker-b", 60.0))
            await until_waiting_on_a_lock(b, "INSERT INTO leases")
            assert not taking.done()
        taken = await taking
        assert taken is not None and taken.token > lease.token
        assert await b.pool.fetchval("SELECT count(*) FROM messages WHERE key = $1", KEY) == 1
        with pytest.raises(LeaseLost):
            await writer.append_messages(session, [UserMessage(text="after the takeover")])
    finally:
        await a.close()
        await b.close()
