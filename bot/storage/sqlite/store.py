"""The SQLite store: one file under the data dir, through aiosqlite.

WAL journal, one connection, every write in ``BEGIN IMMEDIATE`` (so a second process waits for
the lock instead of failing half-way), numbered migrations from ``migrations/NNNN_name.sql`` with
the applied versions recorded in ``schema_migrations``.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path

import aiosqlite
from pydantic import TypeAdapter

from bot.errors import StoreError
from bot.llm.messages import UserMessage
from bot.sessions.model import Todo
from bot.storage.private import private_dir, private_file
from bot.storage.sqlite.approvals import ApprovalTables
from bot.storage.sqlite.feedback import FeedbackTables
from bot.storage.sqlite.forms import FormTables
from bot.storage.sqlite.jobs import JobTables
from bot.storage.sqlite.memory import MemoryTables
from bot.storage.sqlite.schedules import ScheduleTables
from bot.storage.sqlite.sessions import DeliveryTables, SessionTables
from bot.storage.sqlite.sign_in_waits import SignInWaitTables
from bot.storage.sqlite.sign_ins import SignInTables

log = logging.getLogger(__name__)

TITLE_CHARS = 80
_TODOS: TypeAdapter[tuple[Todo, ...]] = TypeAdapter(tuple[Todo, ...])
_INBOX: TypeAdapter[list[UserMessage]] = TypeAdapter(list[UserMessage])


def migrations() -> list[tuple[int, str, str]]:
    """``(version, name, sql)`` for every migration shipped with the package, in order."""
    found = []
    for entry in resources.files("bot.storage.sqlite").joinpath("migrations").iterdir():
        if entry.name.endswith(".sql"):
            number, _, name = entry.name.removesuffix(".sql").partition("_")
            found.append((int(number), name, entry.read_text(encoding="utf-8")))
    return sorted(found)


class SqliteStore(
    SessionTables,
    DeliveryTables,
    ApprovalTables,
    JobTables,
    ScheduleTables,
    MemoryTables,
    FeedbackTables,
    SignInWaitTables,
    SignInTables,
    FormTables,
):
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._db: aiosqlite.Connection | None = None
        self._write_lock = asyncio.Lock()

    # --- lifecycle ---

    async def open(self) -> None:
        if self._db is not None:
            return
        private_dir(self.path.parent)
        private_file(self.path)  # its -wal and -shm files get the same mode
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

    async def problem(self) -> str | None:
        """None while open (a file of this process's own has no outage to report)."""
        return None if self._db is not None else "not open"

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
        async with self.db.execute(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations"
        ) as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0


def _statements(sql: str) -> list[str]:
    """Split a migration file into statements (no semicolons inside our migrations' literals)."""
    lines = [line for line in sql.splitlines() if not line.lstrip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
