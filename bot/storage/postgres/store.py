"""The PostgreSQL store: any number of processes on one database, through asyncpg.

A pool of connections; numbered migrations from ``migrations/NNNN_name.sql``, applied in one
transaction under a transaction-scoped advisory lock (so workers that start together apply them
once, and the others wait, then find them applied); the applied versions are recorded in
``schema_migrations``. The URL's other query parameters are sent as server settings
(``?search_path=threadline`` keeps the tables in that schema), over the store's own
(:data:`PLANNER`).

Once open, a connection the pool opens in place of one a database restart closed waits for the
server (:mod:`bot.storage.postgres.reconnect`, up to ``reconnect_wait_s``); :meth:`problem` says
whether the database answers now (``/readyz``).

The URL may hold a password: it never appears in an error, a log line or :attr:`where`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlsplit

import asyncpg

from bot.errors import StoreError
from bot.storage.budgets import BudgetStore
from bot.storage.leases import LeaseStore
from bot.storage.postgres.approvals import ApprovalTables
from bot.storage.postgres.batch import AsOne, Gathered
from bot.storage.postgres.budgets import BudgetTables
from bot.storage.postgres.feedback import FeedbackTables
from bot.storage.postgres.forms import FormTables
from bot.storage.postgres.jobs import JobTables
from bot.storage.postgres.leases import LeaseTables
from bot.storage.postgres.memory import MemoryTables
from bot.storage.postgres.reconnect import WaitingConnect
from bot.storage.postgres.schedules import ScheduleTables
from bot.storage.postgres.sessions import DeliveryTables, SessionTables
from bot.storage.postgres.sign_in_waits import SignInWaitTables
from bot.storage.postgres.sign_ins import SignInTables
from bot.storage.postgres.url import describe_failure, redacted
from bot.storage.postgres.work import WorkTables

if TYPE_CHECKING:
    from bot.storage.postgres.db import Conn

log = logging.getLogger(__name__)

MIGRATION_LOCK = 0x7468726561646C6E
"""The advisory lock held while migrations are checked and applied (``threadln`` in ASCII)."""
CONNECT_TIMEOUT_S = 10.0
POOL_SIZE = 10
RECONNECT_WAIT_S = 30.0
"""How long, once open, a new connection waits for a database that is away (restarting)."""
PROBE_S = 1.0
"""How long :meth:`PostgresStore.problem` waits for the database's answer."""


PLANNER = {"random_page_cost": "1.1", "jit": "off"}
"""Server settings of the store's connections, unless the URL sets them (``?random_page_cost=4``).
The rows the hot statements reach (the threads at work) are in memory, where reaching one through
an index costs about what reading the next in order does: at the default (4, for disks) a batch
of lookups by key reads the whole table instead, at every batch, while its table holds from a
few thousand to some tens of thousands of rows (a busy first week). And no statement of the store
runs long enough to gain from being compiled (JIT), while a statement whose row estimate is far
too high (a table of removed rows not yet vacuumed) would be compiled at every execution: the
poll for messages no worker answers, every second on every worker, took 20 ms instead of 1."""


def server_settings(url: str) -> dict[str, str]:
    """The settings of :data:`PLANNER` the URL does not set (asyncpg adds the URL's own)."""
    given = {name for name, _ in parse_qsl(urlsplit(url).query)}
    return {name: value for name, value in PLANNER.items() if name not in given}


def migrations() -> list[tuple[int, str, str]]:
    """``(version, name, sql)`` for every PostgreSQL migration shipped with the package, in order."""
    found = []
    for entry in resources.files("bot.storage.postgres").joinpath("migrations").iterdir():
        if entry.name.endswith(".sql"):
            number, _, name = entry.name.removesuffix(".sql").partition("_")
            found.append((int(number), name, entry.read_text(encoding="utf-8")))
    return sorted(found)


class PostgresStore(
    SessionTables,
    DeliveryTables,
    ApprovalTables,
    JobTables,
    ScheduleTables,
    MemoryTables,
    LeaseTables,
    WorkTables,
    BudgetTables,
    FeedbackTables,
    SignInWaitTables,
    SignInTables,
    FormTables,
):
    def __init__(
        self, url: str, *, pool_size: int = POOL_SIZE, reconnect_wait_s: float = RECONNECT_WAIT_S
    ) -> None:
        self._url = url
        self.where = redacted(url)
        """The database, as it may be shown: the URL without its password."""
        self._pool_size = pool_size
        self._pool: asyncpg.Pool | None = None
        self._connect = WaitingConnect(reconnect_wait_s, lambda: self._pool is not None, self.where)
        self._gathered: dict[str, Gathered] = {}

    # --- lifecycle ---

    async def open(self) -> None:
        if self._pool is not None:
            return
        try:
            pool = await asyncpg.create_pool(
                self._url,
                min_size=1,
                max_size=self._pool_size,
                timeout=CONNECT_TIMEOUT_S,
                reset=_reset,
                connect=self._connect,
                server_settings=server_settings(self._url),
            )
        except (
            OSError,
            TimeoutError,
            asyncpg.PostgresError,
            asyncpg.InterfaceError,
            ValueError,
        ) as exc:
            raise StoreError(describe_failure(self._url, exc)) from None
        try:
            self._pool = pool
            await self._migrate()
        except asyncpg.PostgresError as exc:  # e.g. a login that may not create tables
            self._pool = None
            await pool.close()
            raise StoreError(
                f"cannot create or upgrade the tables in {self.where}: {exc}"
            ) from None
        except BaseException:
            self._pool = None
            await pool.close()
            raise

    async def close(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    @property
    def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise StoreError("the store is not open")
        return self._pool

    async def problem(self) -> str | None:
        """None while the database answers; else why not, in a few words (no password)."""
        if self._pool is None:
            return "not open"
        try:
            async with asyncio.timeout(PROBE_S):
                await self._pool.fetchval("SELECT 1")
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            reason = "no answer in time" if isinstance(exc, TimeoutError) else type(exc).__name__
            return f"PostgreSQL at {self.where} does not answer ({reason})"
        return None

    def gathered(self, name: str, statement: AsOne, *, rows: bool) -> Gathered:
        """The hot statements (those of every run) are sent gathered: see
        :mod:`bot.storage.postgres.batch`."""
        found = self._gathered.get(name)
        if found is None:
            found = self._gathered[name] = Gathered(name, statement, lambda: self.pool, rows=rows)
        return found

    @property
    def round_trips(self) -> tuple[int, int]:
        """``(calls, round trips)`` of the gathered statements so far: a batch is one trip."""
        gathered = self._gathered.values()
        return sum(g.calls for g in gathered), sum(g.sent for g in gathered)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Conn]:
        """A connection of the pool, in one transaction (rolled back on any error)."""
        async with self.pool.acquire() as conn, conn.transaction():
            yield conn

    async def _migrate(self) -> None:
        async with self.transaction() as db:
            await db.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
            await db.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY,"
                " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            applied = {
                r["version"] for r in await db.fetch("SELECT version FROM schema_migrations")
            }
            current = max(applied, default=0)
            shipped = migrations()
            newest = shipped[-1][0] if shipped else 0
            if current > newest:
                raise StoreError(
                    f"the database {self.where} has schema version {current}, newer than this "
                    f"Threadline knows ({newest}); upgrade Threadline or use another database"
                )
            for version, name, sql in shipped:
                if version in applied:  # one numbered below a version applied before comes late
                    continue
                log.info("applying PostgreSQL migration %04d_%s", version, name)
                await db.execute(sql)
                await db.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", version, name
                )

    async def schema_version(self) -> int:
        return int(
            await self.pool.fetchval("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
        )


async def _reset(conn: asyncpg.Connection) -> None:
    """Make a connection given back to the pool ready for the next user. The store keeps no
    session state on pooled connections (its advisory locks are transaction-scoped, it listens on
    a connection of its own), so only a transaction left open needs ending; asyncpg's default
    reset (unlock, close cursors, unlisten, reset settings) would cost a round trip per query."""
    if conn.is_in_transaction():
        await conn.execute("ROLLBACK")


def _keeps_leases(store: PostgresStore) -> LeaseStore:
    """For the type checker: the store keeps leases per thread too."""
    return store


def _shares_budgets(store: PostgresStore) -> BudgetStore:
    """For the type checker: the store shares edit budgets between workers."""
    return store
