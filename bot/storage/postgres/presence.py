"""A worker's presence in the database, so that a worker whose process died is known at once.

While it lives, a worker holds a session advisory lock on a connection of its own (the one that
hears the nudges, :meth:`bot.storage.postgres.work.WorkTables.listen`) and says which in the
``workers`` table (migration 0016). When its process dies, however it dies, the kernel closes
the connection, the server ends the session, and the lock goes with it. The view
``gone_workers`` names the registered workers whose lock is gone; their leases are not live
from then on (:data:`LIVE`), so another worker takes their threads over at its next poll instead
of waiting for the leases to expire.

Nothing but a connection's end lets a lock go, and a worker's end is not the only thing that ends
connections: a server restart, a crash recovery or a failover ends them all at once. A
registration is believed only in the server's life it was made in (``server_life``, which each of
those replaces), so after one of them the leases' expiry decides alone, as without presence. A
worker still alive whose connection alone was ended (``pg_terminate_backend``, a proxy) looks
gone: its threads may be taken over, and its writes are refused from then on by the leases'
fencing tokens, as after any takeover; it registers again on a new connection and checks its
leases at once (:mod:`bot.cluster.workers`).
"""

from __future__ import annotations

import secrets

import asyncpg

PRESENCE_CLASS = 0x746C7772
"""The advisory lock class of the workers' presence locks (``tlwr`` in ASCII; the id is the
worker's ``lock``)."""
GONE = "(SELECT owner FROM gone_workers)"
"""The owners whose presence has gone: a subquery for ``owner IN``."""
LIVE = "{0}.owner <> '' AND {0}.expires_at > clock_timestamp() AND {0}.owner NOT IN " + GONE
"""A lease row (``{0}``) that is live: held, unexpired, and its holder not gone."""

_LIFE = (
    "INSERT INTO server_life (id, started, token) VALUES (1, pg_postmaster_start_time(), $1)"
    " ON CONFLICT (id) DO UPDATE SET started = excluded.started, token = excluded.token"
    " WHERE server_life.started <> excluded.started"
)
_PRUNE = (
    "DELETE FROM workers w WHERE w.owner <> $1"
    " AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.owner = w.owner)"
    " AND (w.owner IN " + GONE + " OR NOT EXISTS (SELECT 1 FROM server_life s"
    " WHERE s.token = w.life AND s.started = pg_postmaster_start_time()))"
)
"""Forget the workers that are gone, or registered in an earlier life of the server, and hold no
lease (one still alive registers again)."""
FORGET = "DELETE FROM workers WHERE owner = $1"
"""A worker alive that cannot hold its presence says so: its leases live until they expire."""
PRESENT = "SELECT EXISTS (SELECT 1 FROM workers WHERE owner = $1 AND owner NOT IN " + GONE + ")"
"""Whether a worker is registered and its lock held."""
_REGISTER = (
    "INSERT INTO workers (owner, lock, life, since) VALUES ($1, $2, $3, clock_timestamp())"
    " ON CONFLICT (owner) DO UPDATE SET lock = excluded.lock, life = excluded.life,"
    " since = excluded.since"
)


async def register(conn: asyncpg.Connection, owner: str) -> int:
    """Hold a presence lock on ``conn`` (for as long as it lives) and register it as
    ``owner``'s; the lock's id. Registered in one transaction, the lock already held, so no other
    worker ever sees the registration without its lock."""
    async with conn.transaction():
        await conn.execute(_LIFE, secrets.randbits(62))
        life = await conn.fetchval("SELECT token FROM server_life WHERE id = 1")
        while True:  # an id not held in this database (schemas share the lock space)
            lock = await conn.fetchval("SELECT nextval('worker_locks')::int")
            if await conn.fetchval("SELECT pg_try_advisory_lock($1, $2)", PRESENCE_CLASS, lock):
                break
        await conn.execute(_PRUNE, owner)
        await conn.execute(_REGISTER, owner, lock, life)
    return int(lock)
