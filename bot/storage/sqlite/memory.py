"""The SQLite store's memories, searched with FTS5 (``memories_fts`` indexes ``memories.note``).

The full-text index is kept up to date in the same transaction as the table. A query is built
from words only, each quoted (``"deploy"*``: a word that starts so), so nothing a person or the
model types is read as FTS syntax.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from bot.memory.model import Memory
from bot.storage import rows as stored
from bot.storage.sqlite.db import Db

_COLUMNS = "m.id, m.channel, m.key, m.scope, m.note, m.author_id, m.author_name, m.created_at"
_SEEN_BY = "m.channel = ? AND (m.scope = 'channel' OR m.key = ?)"
"""The memories a thread sees: its channel's, and its own."""


def match_query(terms: Sequence[str]) -> str:
    """An FTS5 query in which every term must start a word: ``"deploy"* "key"*``."""
    return " ".join('"' + term.replace('"', '""') + '"*' for term in terms)


class MemoryTables:
    """Mixed into :class:`bot.storage.sqlite.store.SqliteStore`."""

    async def add_memory(self: Db, draft: Memory, *, per_channel: int) -> Memory | None:
        d = draft
        async with self.transaction() as db:
            cursor = await db.execute(
                "INSERT INTO memories (channel, key, scope, note, author_id, author_name, created_at)"
                " SELECT ?, ?, ?, ?, ?, ?, ?"
                " WHERE (SELECT COUNT(*) FROM memories WHERE channel = ?) < ?",
                (
                    d.channel,
                    d.key,
                    d.scope,
                    d.note,
                    d.author_id,
                    d.author_name,
                    d.created_at,
                    d.channel,
                    per_channel,
                ),
            )
            if cursor.rowcount != 1 or cursor.lastrowid is None:
                return None
            await db.execute(
                "INSERT INTO memories_fts (rowid, note) VALUES (?, ?)", (cursor.lastrowid, d.note)
            )
        return dataclasses.replace(d, id=f"m{cursor.lastrowid}")

    async def recent_memories(self: Db, channel: str, key: str, limit: int) -> list[Memory]:
        async with self.db.execute(
            f"SELECT {_COLUMNS} FROM memories m WHERE {_SEEN_BY} ORDER BY m.id DESC LIMIT ?",
            (channel, key, limit),
        ) as cur:
            return [stored.memory(r) for r in await cur.fetchall()]

    async def recall_memories(
        self: Db, channel: str, key: str, terms: Sequence[str], limit: int
    ) -> list[Memory]:
        if not terms:
            return []
        async with self.db.execute(
            f"SELECT {_COLUMNS} FROM memories_fts f JOIN memories m ON m.id = f.rowid"
            f" WHERE memories_fts MATCH ? AND {_SEEN_BY} ORDER BY f.rank, m.id DESC LIMIT ?",
            (match_query(terms), channel, key, limit),
        ) as cur:
            return [stored.memory(r) for r in await cur.fetchall()]

    async def forget_memory(self: Db, channel: str, key: str, memory_id: str) -> Memory | None:
        number = stored.number(memory_id, "m")
        if number is None:
            return None
        async with self.transaction() as db:
            async with db.execute(
                f"DELETE FROM memories AS m WHERE m.id = ? AND {_SEEN_BY} RETURNING"
                " id, channel, key, scope, note, author_id, author_name, created_at",
                (number, channel, key),
            ) as cur:
                row = await cur.fetchone()
            if row is None:
                return None
            await db.execute(
                "INSERT INTO memories_fts (memories_fts, rowid, note) VALUES ('delete', ?, ?)",
                (number, row[4]),
            )
        return stored.memory(row)
