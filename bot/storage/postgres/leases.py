"""The PostgreSQL store's leases per thread (see :mod:`bot.storage.leases`).

Taking is one statement: an upsert whose update happens only when the lease is expired or
already the taker's, so of several workers taking at once exactly one gets it (the row lock
makes the others re-check against its new expiry). A fenced write locks the lease row ``FOR
SHARE`` and checks the token in the write's own transaction: a takeover (an update of that row)
waits for the write to commit, and a write after a takeover finds another token and writes
nothing. An append or a state save, the writes of every run, is one statement (one round trip):
its writes are data-modifying ``WITH``s and its main query takes the same lock on every lease it
writes under, or fails the statement (SQLSTATE ``TL001``, :mod:`bot.storage.postgres.fenced`),
undoing its writes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Protocol

import asyncpg

from bot.api.inbound import ThreadKey
from bot.errors import LeaseLost
from bot.llm.messages import Message, dump_message
from bot.sessions.model import RunState, Session
from bot.sessions.store import SessionStore
from bot.storage import rows as stored
from bot.storage.leases import Lease
from bot.storage.postgres.batch import CALLS, AsOne
from bot.storage.postgres.db import PgDb
from bot.storage.postgres.fenced import APPENDED, SAVES
from bot.storage.postgres.presence import GONE
from bot.storage.postgres.sessions import (
    REPLACE,
    UPSERT,
    session_values,
)

if TYPE_CHECKING:
    from bot.storage.postgres.db import Conn

_LEASE = "key, owner, token, extract(epoch FROM expires_at)::float8 AS expires_at, (c.n - 1)::int AS call"
_TAKE = AsOne(
    "WITH c AS (SELECT * FROM unnest($1::text[], $2::text[], $3::float8[]) "
    + CALLS.format("key, owner, ttl")
    + "),"
    " taken AS (INSERT INTO leases (key, owner, token, expires_at)"
    " SELECT key, owner, nextval('lease_tokens'), clock_timestamp() + make_interval(secs => ttl) FROM c ORDER BY n"
    " ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, token = excluded.token,"
    " expires_at = excluded.expires_at"
    " WHERE leases.expires_at <= clock_timestamp() OR leases.owner IN ('', excluded.owner)"
    " OR leases.owner IN " + GONE + " RETURNING key, owner, token, expires_at)"
    f" SELECT {_LEASE} FROM taken JOIN c USING (key, owner)"
)
"""A batch of takes (each call: key, owner, seconds) in one statement."""
_HELD = "FROM unnest($1::text[], $2::text[], $3::int8[]{}) " + CALLS.format("k, o, t{}")
_HELD_WHERE = " WHERE leases.key = ANY($1::text[]) AND leases.key = c.k AND leases.owner = c.o AND leases.token = c.t"
_RENEW = AsOne(
    "UPDATE leases SET expires_at = clock_timestamp() + make_interval(secs => c.ttl) "
    + _HELD.format(", $4::float8[]", ", ttl")
    + _HELD_WHERE
    + " RETURNING "
    + _LEASE
)
"""A batch of renewals (each call: key, owner, token, seconds) in one statement."""
_RELEASE = AsOne(
    "UPDATE leases SET owner = '', expires_at = clock_timestamp() "
    + _HELD.format("", "")
    + _HELD_WHERE
    + " RETURNING (c.n - 1)::int AS call"
)
"""A batch of releases (each call: key, owner, token) in one statement."""
_FENCE = "SELECT 1 FROM leases WHERE key = $1 AND owner = $2 AND token = $3 FOR SHARE"
LOST = "TL001"
"""The SQLSTATE of a fenced write whose lease is no longer the writer's (``threadline_hold_lease``)."""


def _lease(row: asyncpg.Record | None) -> Lease | None:
    if row is None:
        return None
    return Lease(ThreadKey(row["key"]), row["owner"], row["token"], row["expires_at"])


class _Store(PgDb, SessionStore, Protocol):
    pass


class FencedSessions:
    """A :class:`SessionStore` whose writes hold ``lease``: reads as the store's; each write
    checks, in its transaction, that the lease is still the thread's."""

    def __init__(self, store: _Store, lease: Lease) -> None:
        self._store = store
        self.lease = lease

    @asynccontextmanager
    async def transaction(self, key: ThreadKey) -> AsyncIterator[Conn]:
        """A transaction of the pool in which the lease is checked and held: a takeover waits
        for it to end; :class:`LeaseLost` when the lease is no longer ``key``'s."""
        async with self._store.transaction() as db:
            lease = self.lease
            if await db.fetchval(_FENCE, key, lease.owner, lease.token) is None:
                raise LeaseLost(
                    f"the lease on {key} with token {lease.token} is no longer {lease.owner}'s"
                )
            yield db

    async def load_session(self, key: ThreadKey, now: float) -> Session:
        return await self._store.load_session(key, now)

    async def has_session(self, key: ThreadKey) -> bool:
        return await self._store.has_session(key)

    async def keys_in_state(self, state: RunState, limit: int = 1000) -> list[ThreadKey]:
        return await self._store.keys_in_state(state, limit)

    async def _fenced(self, name: str, statement: AsOne, *args: object) -> None:
        """One statement that holds the lease (its last two parameters) or writes nothing."""
        lease = self.lease
        try:
            gathered = self._store.gathered(name, statement, rows=False)
            await gathered.execute(lease.key, *args, lease.owner, lease.token)
        except asyncpg.PostgresError as exc:
            if exc.sqlstate != LOST:
                raise
            raise LeaseLost(
                f"the lease on {lease.key} with token {lease.token} is no longer {lease.owner}'s"
            ) from None

    async def append_messages(self, session: Session, messages: Sequence[Message]) -> None:
        if not messages:
            return
        bodies = [dump_message(m) for m in messages]
        await self._fenced(
            "append_messages",
            APPENDED,
            *session_values(session, messages),
            len(session.messages),
            bodies,
            stored.spoken(messages),
        )
        session.messages.extend(messages)

    async def replace_messages(self, session: Session, messages: Sequence[Message]) -> None:
        bodies = [dump_message(m) for m in messages]
        async with self.transaction(session.key) as db:
            await db.execute(UPSERT, *session_values(session, messages))
            await db.execute("DELETE FROM messages WHERE key = $1", session.key)
            await db.execute(REPLACE, session.key, bodies)
        session.messages[:] = messages

    async def save_state(self, session: Session) -> None:
        await self._fenced("save_state", SAVES, *session_values(session))


class LeaseTables:
    """Mixed into :class:`bot.storage.postgres.store.PostgresStore`."""

    async def take_lease(self: PgDb, key: ThreadKey, owner: str, ttl_s: float) -> Lease | None:
        if not owner:
            raise ValueError("a lease needs an owner")
        taken = await self.gathered("take_lease", _TAKE, rows=True).fetch(key, key, owner, ttl_s)
        return _lease(taken[0] if taken else None)

    async def renew_lease(self: PgDb, lease: Lease, ttl_s: float) -> Lease | None:
        renewed = await self.gathered("renew_lease", _RENEW, rows=True).fetch(
            lease.key, lease.key, lease.owner, lease.token, ttl_s
        )
        return _lease(renewed[0] if renewed else None)

    async def release_lease(self: PgDb, lease: Lease) -> bool:
        released = await self.gathered("release_lease", _RELEASE, rows=True).fetch(
            lease.key, lease.key, lease.owner, lease.token
        )
        return bool(released)

    async def lease_of(self: PgDb, key: ThreadKey) -> Lease | None:
        return _lease(
            await self.pool.fetchrow(
                "SELECT key, owner, token, extract(epoch FROM expires_at)::float8 AS expires_at"
                " FROM leases WHERE key = $1",
                key,
            )
        )

    def sessions_under(self: _Store, lease: Lease) -> SessionStore:
        return FencedSessions(self, lease)
