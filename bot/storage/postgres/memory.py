"""The PostgreSQL store's memories, searched with its full-text search (``to_tsvector('simple',
note)``, indexed). A query is built from words only, each a prefix (``deploy:*``), so nothing a
person or the model types is read as query syntax. A channel's limit is checked and the memory
added under the channel's advisory lock."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from bot.memory.model import Memory
from bot.storage import rows as stored
from bot.storage.postgres.batch import CALLS, AsOne
from bot.storage.postgres.db import PgDb

_COLUMNS = "m.id, m.channel, m.key, m.scope, m.note, m.author_id, m.author_name, m.created_at"
_SEEN_BY = "m.channel = $1 AND (m.scope = 'channel' OR m.key = $2)"
"""The memories a thread sees: its channel's, and its own."""
_RECENT = AsOne(
    "SELECT r.*, (c.n - 1)::int AS call FROM unnest($1::text[], $2::text[], $3::int[]) "
    + CALLS.format("channel, key, lim")
    + f" CROSS JOIN LATERAL (SELECT {_COLUMNS} FROM memories m"
    + " WHERE m.channel = c.channel AND (m.scope = 'channel' OR m.key = c.key) ORDER BY m.id DESC LIMIT c.lim) r"
    + " ORDER BY c.n, r.id DESC"
)
"""The newest memories of a batch of threads (each call: channel, key, how many) in one statement."""
_WORD = re.compile(r"^\w+$")


def tsquery(terms: Sequence[str]) -> str:
    """Every term a word prefix: ``deploy:* & key:*`` (terms that are not words are left out)."""
    return " & ".join(f"{term.lower()}:*" for term in terms if _WORD.match(term))


class MemoryTables:
    """Mixed into :class:`bot.storage.postgres.store.PostgresStore`."""

    async def add_memory(self: PgDb, draft: Memory, *, per_channel: int) -> Memory | None:
        d = draft
        async with self.transaction() as db:
            await db.execute("SELECT pg_advisory_xact_lock(hashtext('memories:' || $1))", d.channel)
            if (
                await db.fetchval("SELECT COUNT(*) FROM memories WHERE channel = $1", d.channel)
                >= per_channel
            ):
                return None
            number = await db.fetchval(
                "INSERT INTO memories (channel, key, scope, note, author_id, author_name, created_at)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
                d.channel,
                d.key,
                d.scope,
                d.note,
                d.author_id,
                d.author_name,
                d.created_at,
            )
        return dataclasses.replace(d, id=f"m{number}")

    async def recent_memories(self: PgDb, channel: str, key: str, limit: int) -> list[Memory]:
        rows = await self.gathered("recent_memories", _RECENT, rows=True).fetch(
            key, channel, key, limit
        )
        return [stored.memory(tuple(r)[:-1]) for r in rows]  # without the call

    async def recall_memories(
        self: PgDb, channel: str, key: str, terms: Sequence[str], limit: int
    ) -> list[Memory]:
        query = tsquery(terms)
        if not query:
            return []
        rows = await self.pool.fetch(
            f"SELECT {_COLUMNS} FROM memories m, to_tsquery('simple', $3) q"
            f" WHERE {_SEEN_BY} AND to_tsvector('simple', m.note) @@ q"
            " ORDER BY ts_rank(to_tsvector('simple', m.note), q) DESC, m.id DESC LIMIT $4",
            channel,
            key,
            query,
            limit,
        )
        return [stored.memory(r) for r in rows]

    async def forget_memory(self: PgDb, channel: str, key: str, memory_id: str) -> Memory | None:
        number = stored.number(memory_id, "m")
        if number is None:
            return None
        row = await self.pool.fetchrow(
            f"DELETE FROM memories AS m WHERE m.id = $3 AND {_SEEN_BY} RETURNING {_COLUMNS}",
            channel,
            key,
            number,
        )
        return stored.memory(row) if row else None
