"""The SQLite store's tables for sessions (the transcript and the state around it) and for
delivery ids already answered."""

from __future__ import annotations

from collections.abc import Sequence

import aiosqlite

from bot.api.home import RecentThread
from bot.api.inbound import Attachment, ThreadKey
from bot.llm.messages import Message, UserMessage, dump_message, load_message
from bot.sessions.model import RunState, Session
from bot.storage import rows as stored
from bot.storage.sqlite.db import Db


async def keep(
    db: aiosqlite.Connection,
    key: ThreadKey,
    message: UserMessage,
    now: float,
    files: Sequence[Attachment] = (),
) -> bool:
    """In the transaction ``db``: record ``message``'s delivery id and keep it as an arrival
    for ``key`` (with the ``files`` it names, not downloaded yet); False (nothing kept) when
    the id was recorded before."""
    cur = await db.execute(
        "INSERT INTO deliveries (event_id, seen_at) VALUES (?, ?) ON CONFLICT (event_id) DO NOTHING",
        (message.event_id, now),
    )
    if cur.rowcount != 1:
        return False
    await db.execute(
        "INSERT INTO arrivals (event_id, key, message, at, files) VALUES (?, ?, ?, ?, ?)",
        (message.event_id, key, dump_message(message), now, stored.dump_files(files)),
    )
    return True


class SessionTables:
    """Mixed into :class:`bot.storage.sqlite.store.SqliteStore`."""

    async def load_session(self: Db, key: ThreadKey, now: float) -> Session:
        db = self.db
        async with db.execute(
            f"SELECT {stored.SESSION_COLUMNS} FROM sessions WHERE key = ?",
            (key,),
        ) as cur:
            row = await cur.fetchone()
        if row is None:
            return Session(key=key, created_at=now, updated_at=now)
        async with db.execute(
            "SELECT body FROM messages WHERE key = ? ORDER BY seq", (key,)
        ) as cur:
            bodies = await cur.fetchall()
        return stored.session_of(key, row, [body for (body,) in bodies])

    async def has_session(self: Db, key: ThreadKey) -> bool:
        async with self.db.execute(
            "SELECT 1 FROM sessions WHERE key = ? UNION ALL SELECT 1 FROM arrivals WHERE key = ?",
            (key, key),
        ) as cur:
            return await cur.fetchone() is not None

    async def append_messages(self: Db, session: Session, messages: Sequence[Message]) -> None:
        if not messages:
            return
        start = len(session.messages)
        rows = [(session.key, start + i, dump_message(m)) for i, m in enumerate(messages)]
        async with self.transaction() as db:
            await _upsert(db, session, messages)
            await db.executemany("INSERT INTO messages (key, seq, body) VALUES (?, ?, ?)", rows)
            await _spoke(db, session, messages)
        session.messages.extend(messages)

    async def replace_messages(self: Db, session: Session, messages: Sequence[Message]) -> None:
        rows = [(session.key, i, dump_message(m)) for i, m in enumerate(messages)]
        async with self.transaction() as db:
            await _upsert(db, session, messages)
            await db.execute("DELETE FROM messages WHERE key = ?", (session.key,))
            await db.executemany("INSERT INTO messages (key, seq, body) VALUES (?, ?, ?)", rows)
        session.messages[:] = messages

    async def save_state(self: Db, session: Session) -> None:
        async with self.transaction() as db:
            await _upsert(db, session)

    async def keys_in_state(self: Db, state: RunState, limit: int = 1000) -> list[ThreadKey]:
        async with self.db.execute(
            "SELECT key FROM sessions WHERE state = ? ORDER BY updated_at LIMIT ?",
            (state.value, limit),
        ) as cur:
            return [ThreadKey(row[0]) for row in await cur.fetchall()]

    async def threads_of(
        self: Db, person: str, within: str = "", limit: int = 10
    ) -> list[RecentThread]:
        exact, under = stored.keys_within(within)
        async with self.db.execute(
            "SELECT key, title, last_at FROM thread_people WHERE person = ?"
            " AND (key = ? OR substr(key, 1, ?) = ?) ORDER BY last_at DESC, key LIMIT ?",
            (person, exact, len(under), under, limit),
        ) as cur:
            rows = await cur.fetchall()
        return [RecentThread(ThreadKey(key), title, at) for key, title, at in rows]

    async def latest_under(self: Db, prefix: str) -> ThreadKey | None:
        async with self.db.execute(
            "SELECT key FROM sessions WHERE substr(key, 1, ?) = ? ORDER BY updated_at DESC, key LIMIT 1",
            (len(prefix), prefix),
        ) as cur:
            row = await cur.fetchone()
        return None if row is None else ThreadKey(row[0])


async def _spoke(db: aiosqlite.Connection, session: Session, messages: Sequence[Message]) -> None:
    """The people speaking in ``messages``: this thread is among theirs, as of now."""
    rows = [
        (person, session.key, title, session.updated_at)
        for person, title in stored.spoken(messages)
    ]
    if rows:
        await db.executemany(
            "INSERT INTO thread_people (person, key, title, last_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (person, key) DO UPDATE SET last_at = excluded.last_at",
            rows,
        )


async def _upsert(
    db: aiosqlite.Connection, session: Session, messages: Sequence[Message] = ()
) -> None:
    """Write the session row; the arrivals of the messages it now holds (``messages`` being
    written, and the inbox) are done."""
    await db.execute(
        f"INSERT INTO sessions (key, {stored.SESSION_COLUMNS})"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (key) DO UPDATE SET todos = excluded.todos, usage = excluded.usage,"
        " cost_usd = excluded.cost_usd, state = excluded.state, panel = excluded.panel,"
        " updated_at = excluded.updated_at,"
        " inbox = excluded.inbox, day = excluded.day, day_tokens = excluded.day_tokens,"
        " day_cost_usd = excluded.day_cost_usd, stop_buttons = excluded.stop_buttons,"
        " toolkits = excluded.toolkits",
        stored.session_row(session),
    )
    # after the session row: a read on this connection between the two statements (the
    # transaction is not committed yet, but this connection sees it) finds the thread joined
    done = [(event_id,) for event_id in stored.arrived(session, messages)]
    if done:
        await db.executemany("DELETE FROM arrivals WHERE event_id = ?", done)


class DeliveryTables:
    """Mixed into :class:`bot.storage.sqlite.store.SqliteStore`."""

    async def first_delivery(self: Db, event_id: str, now: float) -> bool:
        async with self.transaction() as db:
            cur = await db.execute(
                "INSERT INTO deliveries (event_id, seen_at) VALUES (?, ?)"
                " ON CONFLICT (event_id) DO NOTHING",
                (event_id, now),
            )
            return cur.rowcount == 1

    async def accept(
        self: Db,
        key: ThreadKey,
        message: UserMessage,
        now: float,
        files: Sequence[Attachment] = (),
    ) -> bool:
        if not message.event_id:
            raise ValueError("an accepted message needs its event id")
        async with self.transaction() as db:
            return await keep(db, key, message, now, files)

    async def arrival_files(self: Db, event_id: str) -> tuple[Attachment, ...]:
        async with self.db.execute(
            "SELECT files FROM arrivals WHERE event_id = ?", (event_id,)
        ) as cur:
            row = await cur.fetchone()
        return () if row is None else stored.load_files(row[0])

    async def arrivals(self: Db, limit: int = 1000) -> list[tuple[ThreadKey, UserMessage]]:
        async with self.db.execute(
            "SELECT key, message FROM arrivals ORDER BY seq LIMIT ?", (limit,)
        ) as cur:
            rows = await cur.fetchall()
        found = [(ThreadKey(key), load_message(body)) for key, body in rows]
        return [(key, m) for key, m in found if isinstance(m, UserMessage)]

    async def end_arrival(self: Db, event_id: str) -> None:
        async with self.transaction() as db:
            await db.execute("DELETE FROM arrivals WHERE event_id = ?", (event_id,))

    async def purge_deliveries(self: Db, before: float) -> int:
        async with self.transaction() as db:
            cur = await db.execute("DELETE FROM deliveries WHERE seen_at < ?", (before,))
            return cur.rowcount
