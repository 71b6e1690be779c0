"""The PostgreSQL store's tables for sessions (the transcript and the state around it) and for
delivery ids already answered.

A session is read in one statement (its row and its transcript as an array, one snapshot), and
an append is one statement too: the session row's upsert and the messages' insert, the first as
a data-modifying ``WITH`` of the second, so it is atomic and costs one round trip.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.api.home import RecentThread
from bot.api.inbound import Attachment, ThreadKey
from bot.llm.messages import Message, UserMessage, dump_message, load_message
from bot.sessions.model import RunState, Session
from bot.storage import rows as stored
from bot.storage.postgres.batch import CALLS, AsOne
from bot.storage.postgres.db import PgDb

_ROW = (
    f"INSERT INTO sessions (key, {stored.SESSION_COLUMNS})"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
    " ON CONFLICT (key) DO UPDATE SET todos = excluded.todos, usage = excluded.usage,"
    " cost_usd = excluded.cost_usd, state = excluded.state, panel = excluded.panel,"
    " updated_at = excluded.updated_at, inbox = excluded.inbox, day = excluded.day,"
    " day_tokens = excluded.day_tokens, day_cost_usd = excluded.day_cost_usd,"
    " stop_buttons = excluded.stop_buttons, toolkits = excluded.toolkits"
)
_ARRIVED = "DELETE FROM arrivals WHERE event_id = ANY($15::text[])"
"""The arrivals of the messages the session now holds are done (``$15``: their event ids)."""
UPSERT = f"WITH arrived AS ({_ARRIVED}) {_ROW}"
INSERT = (
    "INSERT INTO messages (key, seq, body)"
    " SELECT $1, $16 + n - 1, body FROM unnest($17::text[]) WITH ORDINALITY AS m (body, n)"
)
SPOKE = (
    "spoke AS (INSERT INTO thread_people (person, key, title, last_at)"
    " SELECT person, $1, title, $8 FROM unnest($18::text[], $19::text[]) AS s (person, title)"
    " ON CONFLICT (person, key) DO UPDATE SET last_at = excluded.last_at)"
)
"""The people speaking in the new messages (``$18``, with their titles ``$19``): this thread
is among theirs, as of the session's update (``$8``)."""
APPEND = f"WITH arrived AS ({_ARRIVED}), saved AS ({_ROW}), {SPOKE} {INSERT}"
REPLACE = INSERT.replace("$16", "0").replace("$17", "$2")
"""The whole transcript (``$2``) of the thread ``$1``, numbered from 0."""
_LOAD = AsOne(
    f"SELECT {stored.SESSION_COLUMNS},"
    " ARRAY(SELECT body FROM messages WHERE key = c.k ORDER BY seq) AS bodies, (c.n - 1)::int AS call"
    " FROM unnest($1::text[]) "
    + CALLS.format("k")
    + " JOIN sessions ON sessions.key = c.k AND sessions.key = ANY($1::text[])"  # by the index
)
"""Sessions and their transcripts (each call: a key), in one statement (one snapshot)."""
ACCEPT = AsOne(
    "WITH c AS (SELECT * FROM unnest($1::text[], $2::float8[], $3::text[], $4::text[], $5::text[]) "
    + CALLS.format("event_id, seen_at, key, message, files")
    + "),"
    " first AS (INSERT INTO deliveries (event_id, seen_at) SELECT event_id, seen_at FROM c ORDER BY n"
    " ON CONFLICT (event_id) DO NOTHING RETURNING event_id),"
    " kept AS (INSERT INTO arrivals (event_id, key, message, at, files)"
    " SELECT event_id, key, message, extract(epoch FROM clock_timestamp()), files"
    " FROM c JOIN first USING (event_id)"
    " ORDER BY n RETURNING event_id)"
    " SELECT (c.n - 1)::int AS call FROM c JOIN kept USING (event_id)"
)
"""Record delivery ids and keep their messages as arrivals of their threads, in one statement
(each call: event id, seen at, thread key, message, the files it names as JSON or None); returns the calls whose delivery id was
new (a call whose id was recorded before keeps nothing). An arrival's ``at`` is the database's
clock (workers' may be off)."""
ACTIVE = "state <> 'idle'"
"""The predicate of the index of sessions by state (migration 0010): a query by state says it
too, or a generic plan, which cannot know the state asked for is not idle, reads every row."""
IN_STATE = (
    f"SELECT key FROM sessions WHERE state = $1 AND {ACTIVE} ORDER BY updated_at, key LIMIT $2"
)


def session_values(session: Session, messages: Sequence[Message] = ()) -> tuple[Any, ...]:
    """``$1`` to ``$15`` of :data:`UPSERT`: the session row's values, and the event ids of the
    messages it now holds (``messages`` being written, and the inbox)."""
    return (*stored.session_row(session), stored.arrived(session, messages))


class SessionTables:
    """Mixed into :class:`bot.storage.postgres.store.PostgresStore`."""

    async def load_session(self: PgDb, key: ThreadKey, now: float) -> Session:
        found = await self.gathered("load_session", _LOAD, rows=True).fetch(key, key)
        if not found:
            return Session(key=key, created_at=now, updated_at=now)
        return stored.session_of(key, found[0], found[0]["bodies"])

    async def has_session(self: PgDb, key: ThreadKey) -> bool:
        found = await self.pool.fetchval(
            "SELECT 1 FROM sessions WHERE key = $1 UNION ALL SELECT 1 FROM arrivals WHERE key = $1 LIMIT 1",
            key,
        )
        return found is not None

    async def append_messages(self: PgDb, session: Session, messages: Sequence[Message]) -> None:
        if not messages:
            return
        bodies = [dump_message(m) for m in messages]
        people = stored.spoken(messages)
        await self.pool.execute(
            APPEND,
            *session_values(session, messages),
            len(session.messages),
            bodies,
            [person for person, _ in people],
            [title for _, title in people],
        )
        session.messages.extend(messages)

    async def replace_messages(self: PgDb, session: Session, messages: Sequence[Message]) -> None:
        bodies = [dump_message(m) for m in messages]
        async with self.transaction() as db:
            await db.execute(UPSERT, *session_values(session, messages))
            await db.execute("DELETE FROM messages WHERE key = $1", session.key)
            await db.execute(REPLACE, session.key, bodies)
        session.messages[:] = messages

    async def save_state(self: PgDb, session: Session) -> None:
        await self.pool.execute(UPSERT, *session_values(session))

    async def keys_in_state(self: PgDb, state: RunState, limit: int = 1000) -> list[ThreadKey]:
        sql = (
            IN_STATE if state is not RunState.IDLE else IN_STATE.replace(f" AND {ACTIVE}", "")
        )  # not indexed
        rows = await self.pool.fetch(sql, state.value, limit)
        return [ThreadKey(row["key"]) for row in rows]

    async def threads_of(
        self: PgDb, person: str, within: str = "", limit: int = 10
    ) -> list[RecentThread]:
        rows = await self.pool.fetch(
            "SELECT key, title, last_at FROM thread_people WHERE person = $1"
            " AND (key = $2 OR starts_with(key, $3)) ORDER BY last_at DESC, key LIMIT $4",
            person,
            *stored.keys_within(within),
            limit,
        )
        return [RecentThread(ThreadKey(r["key"]), r["title"], r["last_at"]) for r in rows]

    async def latest_under(self: PgDb, prefix: str) -> ThreadKey | None:
        found = await self.pool.fetchval(
            "SELECT key FROM sessions WHERE starts_with(key, $1) ORDER BY updated_at DESC, key LIMIT 1",
            prefix,
        )
        return None if found is None else ThreadKey(found)


def changed(status: str) -> int:
    """The row count in a command status (``INSERT 0 1``, ``DELETE 3``, ``UPDATE 0``)."""
    return int(status.rsplit(" ", 1)[-1])


class DeliveryTables:
    """Mixed into :class:`bot.storage.postgres.store.PostgresStore`."""

    async def first_delivery(self: PgDb, event_id: str, now: float) -> bool:
        status = await self.pool.execute(
            "INSERT INTO deliveries (event_id, seen_at) VALUES ($1, $2) ON CONFLICT (event_id) DO NOTHING",
            event_id,
            now,
        )
        return changed(status) == 1

    async def accept(
        self: PgDb,
        key: ThreadKey,
        message: UserMessage,
        now: float,
        files: Sequence[Attachment] = (),
    ) -> bool:
        if not message.event_id:
            raise ValueError("an accepted message needs its event id")
        added = await self.gathered(
            "accept", ACCEPT, rows=True
        ).fetch(  # in the order of the rows it locks
            message.event_id,
            message.event_id,
            now,
            key,
            dump_message(message),
            stored.dump_files(files),
        )
        return bool(added)

    async def arrival_files(self: PgDb, event_id: str) -> tuple[Attachment, ...]:
        found = await self.pool.fetchval("SELECT files FROM arrivals WHERE event_id = $1", event_id)
        return stored.load_files(found)

    async def arrivals(self: PgDb, limit: int = 1000) -> list[tuple[ThreadKey, UserMessage]]:
        rows = await self.pool.fetch(
            "SELECT key, message FROM arrivals ORDER BY seq LIMIT $1", limit
        )
        found = [(ThreadKey(row["key"]), load_message(row["message"])) for row in rows]
        return [(key, m) for key, m in found if isinstance(m, UserMessage)]

    async def end_arrival(self: PgDb, event_id: str) -> None:
        await self.pool.execute("DELETE FROM arrivals WHERE event_id = $1", event_id)

    async def purge_deliveries(self: PgDb, before: float) -> int:
        return changed(await self.pool.execute("DELETE FROM deliveries WHERE seen_at < $1", before))
