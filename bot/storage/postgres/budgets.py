"""The PostgreSQL store's shared edit budgets (see :mod:`bot.storage.budgets`).

Taking slots and pausing are one call each of a function of migrations 0007, 0009 and 0017 (one
round trip; the budget's row is locked for the few microseconds of the computation, on the
database's clock, ``clock_timestamp()``). A pause is also told on the ``threadline_budget``
channel (``NOTIFY``, payload ``"<seconds> <key>"``), heard on a connection of its own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import asyncpg

from bot.errors import StoreError
from bot.storage.budgets import Slots
from bot.storage.postgres.db import PgDb
from bot.storage.postgres.work import Listening

log = logging.getLogger(__name__)

CHANNEL = "threadline_budget"
TIMEOUT_S = 2.0
"""A budget call that takes longer counts as the database lost (the edit paces locally)."""
_FAILURES = (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError, StoreError)


class BudgetTables:
    """Mixed into :class:`bot.storage.postgres.store.PostgresStore`."""

    _url: str

    async def take_slots(
        self: PgDb,
        key: str,
        worker: str,
        *,
        interval_s: float,
        room: float,
        wanted: int,
        horizon_s: float,
        must: bool,
        window: int = 0,
    ) -> Slots:
        try:
            async with asyncio.timeout(TIMEOUT_S):
                row = await self.pool.fetchrow(
                    "SELECT * FROM threadline_budget_slots($1, $2, $3, $4, $5, $6, $7, $8)",
                    key,
                    worker,
                    interval_s,
                    room,
                    wanted,
                    horizon_s,
                    must,
                    window,
                )
        except _FAILURES as exc:
            raise StoreError(f"cannot take edit slots of {key}: {exc}") from None
        assert row is not None
        return Slots(tuple(row["delays"]), row["next_in"], row["paused_for"], row["workers"])

    async def pause_budget(self: PgDb, key: str, seconds: float, *, slower: float = 1.0) -> float:
        try:
            async with asyncio.timeout(TIMEOUT_S):
                left = await self.pool.fetchval(
                    "SELECT threadline_budget_pause($1, $2, $3)", key, seconds, slower
                )
        except _FAILURES as exc:
            raise StoreError(f"cannot pause the edit budget of {key}: {exc}") from None
        return float(left)

    async def listen_budgets(self, heard: Callable[[str, float], None]) -> Listening:
        def on_notify(conn: object, pid: int, channel: str, payload: object) -> None:
            seconds, _, key = str(payload).partition(" ")
            try:
                left = float(seconds)
            except ValueError:
                log.warning("ignoring a malformed budget pause %r", payload)
                return
            heard(key, left)

        try:
            conn = await asyncpg.connect(self._url, timeout=TIMEOUT_S * 5)
        except _FAILURES as exc:
            raise StoreError(f"cannot listen for edit budget pauses: {exc}") from None
        listening = Listening(conn)
        try:
            await conn.add_listener(CHANNEL, on_notify)
        except _FAILURES as exc:
            await listening.close()
            raise StoreError(f"cannot listen for edit budget pauses: {exc}") from None
        return listening
