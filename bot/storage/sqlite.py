"""The SQLite store: one file under the data dir, through aiosqlite.

WAL journal, one connection, every write in ``BEGIN IMMEDIATE`` (so a second process waits for
the lock instead of failing half-way), numbered migrations from ``migrations/NNNN_name.sql`` with
the applied versions recorded in ``schema_migrations``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path

import aiosqlite
from pydantic import TypeAdapter, ValidationError

from bot.conversation import ThreadKey
from bot.errors import StoreError
from bot.llm.messages import Message, Usage, UserMessage, dump_message, load_message
from bot.sessions.model import PanelRef, RunState, Session, Todo
from bot.storage.protocol import ThreadSummary
from bot.storage.sqlite_extra import ApprovalTables, JobTables

log = logging.getLogger(__name__)

TITLE_CHARS = 80
_TODOS: TypeAdapter[tuple[Todo, ...]] = TypeAdapter(tuple[Todo, ...])
_INBOX: TypeAdapter[list[UserMessage]] = TypeAdapter(list[UserMessage])


def migrations() -> list[tuple[int, str, str]]:
    """``(version, name, sql)`` for every migration shipped with the package, in order."""
    found = []
    for entry in resources.files("bot.storage").joinpath("migrations").iterdir():
        if entry.name.endswith(".sql"):
            number, _, name = entry.name.removesuffix(".sql").partition("_")
            found.append((int(number), name, entry.read_text(encoding="utf-8")))
    return sorted(found)


class SqliteStore(ApprovalTables, JobTables):
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._db: aiosqlite.Connection | None = None
        self._write_lock = asyncio.Lock()

    # --- lifecycle ---

    async def open(self) -> None:
        if self._db is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # sqlite3 opens the write transaction itself (BEGIN IMMEDIATE) with the first write of a
        # transaction, in the same call: one thread hop less per transaction than an explicit BEGIN
        db = await aiosqlite.connect(self.path, isolation_level="IMMEDIATE")
        try:
            await db.execute("PRAGMA journal_mode=WAL")
            await db.execute("PRAGMA synchronous=NORMAL")
            await db.execute("PRAGMA foreign_keys=ON")
            await db.execute("PRAGMA busy_timeout=5000")
            self._db = db
            await self._migrate()
        except sqlite3.DatabaseError as exc:
            await db.close()
            self._db = None
            raise StoreError(f"cannot use the database {self.path}: {exc}") from exc
        except BaseException:
            await db.close()
            self._db = None
            raise

    async def close(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            await db.close()

    @property
    def db(self) -> aiosqlite.Connection:
        if self._db is None:
            raise StoreError("the store is not open")
        return self._db

    @asynccontextmanager
    async def transaction(self, *, explicit: bool = False) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction; concurrent writers in this process queue on a lock.

        sqlite3 begins it (``BEGIN IMMEDIATE``) with its first write; ``explicit`` begins it at
        once, for transactions whose first statement is not a write (migrations: DDL).
        """
        async with self._write_lock:
            db = self.db
            if explicit:
                await db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                await db.rollback()
                raise
            await db.commit()

    async def _migrate(self) -> None:
        async with self.transaction(explicit=True) as db:
            await db.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations"
                " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            async with db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations") as cur:
                row = await cur.fetchone()
            current = int(row[0]) if row else 0
            shipped = migrations()
            newest = shipped[-1][0] if shipped else 0
            if current > newest:
                raise StoreError(
                    f"the database {self.path} has schema version {current}, newer than this "
                    f"Threadline knows ({newest}); upgrade Threadline or use another data dir"
                )
            for version, name, sql in shipped:
                if version <= current:
                    continue
                log.info("applying migration %04d_%s", version, name)
                for statement in _statements(sql):
                    await db.execute(statement)
                await db.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at)"
                    " VALUES (?, ?, datetime('now'))",
                    (version, name),
                )

    async def schema_version(self) -> int:
        async with self.db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations") as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    # --- sessions ---

    async def load_session(self, key: ThreadKey, now: float) -> Session:
        db = self.db
        async with db.execute(
            "SELECT todos, usage, cost_usd, state, panel, created_at, updated_at, inbox, day,"
            " day_tokens, day_cost_usd FROM sessions WHERE key = ?",
            (key,),
        ) as cur:
            row = await cur.fetchone()
        if row is None:
            return Session(key=key, created_at=now, updated_at=now)
        async with db.execute("SELECT body FROM messages WHERE key = ? ORDER BY seq", (key,)) as cur:
            bodies = await cur.fetchall()
        try:
            messages = [load_message(body) for (body,) in bodies]
            return Session(
                key=key,
                messages=messages,
                todos=_TODOS.validate_json(row[0]),
                usage=Usage.model_validate_json(row[1]),
                cost_usd=float(row[2]),
                state=RunState(row[3]),
                panel=PanelRef(**json.loads(row[4])) if row[4] else None,
                created_at=float(row[5]),
                updated_at=float(row[6]),
                inbox=_INBOX.validate_json(row[7]),
                day=row[8],
                day_tokens=int(row[9]),
                day_cost_usd=float(row[10]),
            )
        except (ValidationError, ValueError, TypeError) as exc:
            raise StoreError(f"the stored session {key} is unreadable: {exc}") from exc

    async def has_session(self, key: ThreadKey) -> bool:
        async with self.db.execute("SELECT 1 FROM sessions WHERE key = ?", (key,)) as cur:
            return await cur.fetchone() is not None

    async def append_messages(self, session: Session, messages: Sequence[Message]) -> None:
        if not messages:
            return
        start = len(session.messages)
        rows = [(session.key, start + i, dump_message(m)) for i, m in enumerate(messages)]
        async with self.transaction() as db:
            await self._upsert_session(db, session, start + len(messages), _title(messages))
            await db.executemany("INSERT INTO messages (key, seq, body) VALUES (?, ?, ?)", rows)
        session.messages.extend(messages)

    async def replace_messages(self, session: Session, messages: Sequence[Message]) -> None:
        rows = [(session.key, i, dump_message(m)) for i, m in enumerate(messages)]
        async with self.transaction() as db:
            await self._upsert_session(db, session, len(messages))
            await db.execute("DELETE FROM messages WHERE key = ?", (session.key,))
            await db.executemany("INSERT INTO messages (key, seq, body) VALUES (?, ?, ?)", rows)
        session.messages[:] = messages

    async def save_state(self, session: Session) -> None:
        async with self.transaction() as db:
            await self._upsert_session(db, session, len(session.messages))

    async def _upsert_session(
        self, db: aiosqlite.Connection, session: Session, count: int, title: str = ""
    ) -> None:
        """Write the session row; ``title`` is kept only when the thread has none yet."""
        panel = session.panel
        await db.execute(
            "INSERT INTO sessions (key, todos, usage, cost_usd, state, panel, message_count,"
            " created_at, updated_at, inbox, day, day_tokens, day_cost_usd, title)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET title = CASE WHEN sessions.title = ''"
            " THEN excluded.title ELSE sessions.title END, todos = excluded.todos, usage = excluded.usage,"
            " cost_usd = excluded.cost_usd, state = excluded.state, panel = excluded.panel,"
            " message_count = excluded.message_count, updated_at = excluded.updated_at,"
            " inbox = excluded.inbox, day = excluded.day, day_tokens = excluded.day_tokens,"
            " day_cost_usd = excluded.day_cost_usd",
            (
                session.key,
                _TODOS.dump_json(session.todos).decode(),
                session.usage.model_dump_json(),
                session.cost_usd,
                session.state.value,
                json.dumps(
                    {"message_id": panel.message_id, "content_hash": panel.content_hash, "pinned": panel.pinned}
                )
                if panel
                else None,
                count,
                session.created_at,
                session.updated_at,
                _INBOX.dump_json(session.inbox).decode(),
                session.day,
                session.day_tokens,
                session.day_cost_usd,
                title,
            ),
        )

    # --- posted messages ---

    async def record_posted(self, key: ThreadKey, message_id: str, kind: str, now: float) -> None:
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO posted (key, message_id, kind, posted_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (key, message_id) DO NOTHING",
                (key, message_id, kind, now),
            )

    async def posted(self, key: ThreadKey, kind: str | None = None) -> list[str]:
        query = "SELECT message_id FROM posted WHERE key = ?"
        args: tuple[str, ...] = (key,)
        if kind is not None:
            query += " AND kind = ?"
            args = (key, kind)
        async with self.db.execute(query + " ORDER BY posted_at, message_id", args) as cur:
            return [row[0] for row in await cur.fetchall()]

    # --- deliveries ---

    async def first_delivery(self, event_id: str, now: float) -> bool:
        async with self.transaction() as db:
            cur = await db.execute(
                "INSERT INTO deliveries (event_id, seen_at) VALUES (?, ?)"
                " ON CONFLICT (event_id) DO NOTHING",
                (event_id, now),
            )
            return cur.rowcount == 1

    async def purge_deliveries(self, before: float) -> int:
        async with self.transaction() as db:
            cur = await db.execute("DELETE FROM deliveries WHERE seen_at < ?", (before,))
            return cur.rowcount

    # --- listing ---

    async def list_threads(self, prefix: str, limit: int = 50) -> list[ThreadSummary]:
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        async with self.db.execute(
            "SELECT key, title, updated_at, message_count FROM sessions"
            " WHERE key LIKE ? ESCAPE '\\' ORDER BY updated_at DESC LIMIT ?",
            (pattern, limit),
        ) as cur:
            rows = await cur.fetchall()
        return [ThreadSummary(ThreadKey(k), t, float(u), int(n)) for k, t, u, n in rows]


    async def keys_in_state(self, state: RunState, limit: int = 1000) -> list[ThreadKey]:
        async with self.db.execute(
            "SELECT key FROM sessions WHERE state = ? ORDER BY updated_at LIMIT ?", (state.value, limit)
        ) as cur:
            return [ThreadKey(row[0]) for row in await cur.fetchall()]


def _title(messages: Sequence[Message]) -> str:
    for message in messages:
        if isinstance(message, UserMessage) and message.text.strip():
            line = " ".join(message.text.split())
            return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"
    return ""


def _statements(sql: str) -> list[str]:
    """Split a migration file into statements (no semicolons inside our migrations' literals)."""
    lines = [line for line in sql.splitlines() if not line.lstrip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
