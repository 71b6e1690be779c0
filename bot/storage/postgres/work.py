"""The PostgreSQL store's side of work shared by workers (see :mod:`bot.cluster.workers`): threads
whose worker died, messages that wait for a thread whose run is elsewhere, Stop requests for
such runs, and the ``NOTIFY`` nudge that tells the other workers to look now.

A lease is *live* while its owner is set, it has not expired on the database's clock, and its
owner's presence has not gone (:mod:`bot.storage.postgres.presence`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Protocol

import asyncpg

from bot.api.inbound import Author, ThreadKey
from bot.llm.messages import UserMessage, load_message
from bot.sessions.model import RunState
from bot.storage.postgres.batch import CALLS, AsOne
from bot.storage.postgres.db import PgDb
from bot.storage.postgres.presence import FORGET, LIVE, PRESENT, register
from bot.storage.postgres.sessions import ACTIVE

CHANNEL = "threadline_work"
"""The ``LISTEN``/``NOTIFY`` channel; a notification's payload is a thread key."""
STOP_KEPT_S = 60.0
"""A Stop request nobody read within this long is dropped (its run has ended)."""
_UNLEASED = "NOT EXISTS (SELECT 1 FROM leases l WHERE l.key = {0}.key AND " + LIVE.format("l") + ")"

_IS_ARRIVAL = AsOne(
    "SELECT (c.n - 1)::int AS call FROM unnest($1::text[]) "
    + CALLS.format("event_id")
    + " JOIN arrivals a ON a.event_id = c.event_id AND a.event_id = ANY($1::text[])"  # by the index
)
ORPHANS = (
    f"SELECT s.key FROM sessions s WHERE s.state = ANY($1::text[]) AND s.{ACTIVE} AND "
    + _UNLEASED.format("s")
    + " ORDER BY s.updated_at LIMIT $2"
)


class _Listener(PgDb, Protocol):
    _url: str


class Listening:
    """A connection of its own that hears the nudges and holds the worker's presence;
    :meth:`close` ends it."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self._conn = conn

    @property
    def alive(self) -> bool:
        return not self._conn.is_closed()

    async def close(self) -> None:
        if not self._conn.is_closed():
            self._conn.terminate()


class WorkTables:
    """Mixed into :class:`bot.storage.postgres.store.PostgresStore`."""

    _url: str

    async def orphans(self: PgDb, limit: int = 100) -> list[ThreadKey]:
        """Threads cut off mid-run whose lease is not live: their worker died (oldest first)."""
        rows = await self.pool.fetch(
            ORPHANS, [RunState.RUNNING.value, RunState.RESUMED.value], limit
        )
        return [ThreadKey(r["key"]) for r in rows]

    async def stranded(self: PgDb, older_than_s: float, limit: int = 100) -> list[ThreadKey]:
        """Threads with messages accepted more than ``older_than_s`` ago (on the database's
        clock, as they were stamped) that no live lease will answer: the worker that accepted
        them died, or its nudge was lost."""
        rows = await self.pool.fetch(
            "SELECT a.key FROM arrivals a WHERE a.at <= extract(epoch FROM clock_timestamp()) - $1 AND "
            + _UNLEASED.format("a")
            + " GROUP BY a.key ORDER BY min(a.seq) LIMIT $2",
            older_than_s,
            limit,
        )
        return [ThreadKey(r["key"]) for r in rows]

    async def arrivals_of(
        self: PgDb, keys: Sequence[ThreadKey]
    ) -> list[tuple[ThreadKey, UserMessage]]:
        """The accepted messages of these threads not yet in their session, in order."""
        if not keys:
            return []
        rows = await self.pool.fetch(
            "SELECT key, message FROM arrivals WHERE key = ANY($1::text[]) ORDER BY seq", list(keys)
        )
        found = [(ThreadKey(r["key"]), load_message(r["message"])) for r in rows]
        return [(key, m) for key, m in found if isinstance(m, UserMessage)]

    async def is_arrival(self: PgDb, event_id: str) -> bool:
        """Whether the message with this event id still waits for its session."""
        found = await self.gathered("is_arrival", _IS_ARRIVAL, rows=True).fetch(event_id, event_id)
        return bool(found)

    async def request_stop(self: PgDb, key: ThreadKey, run_id: str, actor: Author) -> None:
        """Ask the worker running ``run_id`` in ``key`` to stop it, and nudge the workers."""
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO stop_requests (key, run_id, actor_id, actor_name) VALUES ($1, $2, $3, $4)",
                key,
                run_id,
                actor.id,
                actor.display_name,
            )
            await db.execute("SELECT pg_notify($1, $2)", CHANNEL, key)

    async def take_stop_requests(
        self: PgDb, keys: Sequence[ThreadKey]
    ) -> list[tuple[ThreadKey, str, Author]]:
        """The Stop requests for these threads, removed as they are read; old ones are dropped."""
        await self.pool.execute(
            "DELETE FROM stop_requests WHERE at < clock_timestamp() - make_interval(secs => $1)",
            STOP_KEPT_S,
        )
        if not keys:
            return []
        rows = await self.pool.fetch(
            "DELETE FROM stop_requests WHERE key = ANY($1::text[])"
            " RETURNING key, run_id, actor_id, actor_name",
            list(keys),
        )
        return [
            (ThreadKey(r["key"]), r["run_id"], Author(r["actor_id"], r["actor_name"])) for r in rows
        ]

    async def nudge(self: PgDb, key: ThreadKey) -> None:
        """Tell every listening worker to look at ``key`` now."""
        await self.pool.execute("SELECT pg_notify($1, $2)", CHANNEL, key)

    async def listen(
        self: _Listener,
        heard: Callable[[ThreadKey], None],
        owner: str,
        ended: Callable[[], None] = lambda: None,
    ) -> Listening:
        """Hear the nudges on a connection of its own, which holds ``owner``'s presence while it
        lives: ``heard(key)`` for each nudge, ``ended()`` when the connection ends. When that
        fails, ``owner`` is no longer registered (if the database answers): a worker alive but
        not present holds leases that live until they expire, as without presence."""

        def on_notify(conn: object, pid: int, channel: str, payload: object) -> None:
            heard(ThreadKey(str(payload)))

        try:
            conn = await asyncpg.connect(self._url, timeout=10.0)
            try:
                await register(conn, owner)
                await conn.add_listener(CHANNEL, on_notify)
            except BaseException:
                conn.terminate()
                raise
        except Exception:
            with contextlib.suppress(Exception):  # the database away: its life will be another
                await self.pool.execute(FORGET, owner)
            raise
        conn.add_termination_listener(lambda _: ended())
        return Listening(conn)

    async def lease_holders(self: PgDb, keys: Sequence[ThreadKey]) -> dict[ThreadKey, str]:
        """The owner of each live lease among ``keys``."""
        rows = await self.pool.fetch(
            "SELECT key, owner FROM leases WHERE key = ANY($1::text[]) AND "
            + LIVE.format("leases"),
            list(keys),
        )
        return {ThreadKey(r["key"]): r["owner"] for r in rows}

    async def is_present(self: PgDb, owner: str) -> bool:
        """Whether ``owner`` is registered and holds its presence lock."""
        return bool(await self.pool.fetchval(PRESENT, owner))
