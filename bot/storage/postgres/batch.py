"""Calls of one statement gathered while its previous batch is in flight (group commit).

Under load, many runs send the same statement at once: accept a message, take a lease, load a
session, append to a transcript, release the lease. Sent one by one, each costs the database a
wake-up, an execution and (a write) a commit, and the worker a round trip through the pool. A
:class:`Gathered` statement sends the calls that arrived while its previous batch was in flight
as one statement over arrays (:class:`AsOne`, with ``unnest``): one round trip, one execution,
one commit. A call that finds nothing in flight goes at once, alone (the same statement over
arrays of one), so a quiet bot waits for nothing.

When the statement fails for one call (a fenced write whose lease was lost, a constraint), the
database undoes the whole batch, and each call is sent again on its own, so every caller gets
its own outcome, as if it had never been gathered. An error that is not the statement's (the
connection lost) is every caller's. The calls of a batch are sorted by the key of the rows they
lock (the thread's, or the delivery id's), so two batches take their locks in the same order
and do not deadlock each other; the calls of one batch lock distinct rows (a key twice goes in
rounds, each key's calls in their order). A statement that returns rows returns each call's
place in the batch as the column ``call`` (``WITH ORDINALITY``), so each caller gets its own
rows back.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from bot.infra import metrics

LIMIT = 128
"""The most calls in one batch."""


def by_column(calls: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """The calls' arguments as one array per parameter (for ``unnest``)."""
    return tuple(list(column) for column in zip(*calls, strict=True))


CALLS = "WITH ORDINALITY AS c ({}, n)"
"""Names the columns of ``unnest`` over the calls' arrays, and ``n``, the call's place in the
batch from 1 (its rows return ``n - 1`` as ``call``)."""


@dataclass(frozen=True, slots=True)
class AsOne:
    """A statement that does the work of a batch of calls at once (over arrays, with
    ``unnest``): cheaper for the database than the calls one by one. ``args`` turns the calls'
    arguments into its own (by default, :func:`by_column`)."""

    sql: str
    args: Callable[[list[tuple[Any, ...]]], tuple[Any, ...]] = by_column


@dataclass
class _Call:
    key: str
    args: tuple[Any, ...]
    done: asyncio.Future[list[asyncpg.Record]] = field(repr=False)


class Gathered:
    """One statement; :meth:`fetch` (rows) or :meth:`execute` (none), gathered per batch.

    ``name``: the statement's, in the metrics; ``rows``: whether the statement returns rows (each
    with its ``call``); ``pool``: the store's pool, asked for each batch (it may be replaced)."""

    def __init__(
        self, name: str, statement: AsOne, pool: Callable[[], asyncpg.Pool], *, rows: bool
    ) -> None:
        self.name = name
        self._statement = statement
        self._pool = pool
        self._rows = rows
        self._waiting: list[_Call] = []
        self._sending: asyncio.Task[None] | None = None
        self.calls = 0
        self.sent = 0
        """Calls made, and round trips they took (alone or as batches), so far."""

    async def fetch(self, key: str, *args: Any) -> list[asyncpg.Record]:
        """The rows of this call (``key``: the key of the rows it locks, for the batch's order)."""
        call = _Call(key, args, asyncio.get_running_loop().create_future())
        self.calls += 1
        self._waiting.append(call)
        if self._sending is None or self._sending.done():
            self._sending = asyncio.create_task(self._send_all(), name=f"gathered {self.name}")
        return await call.done

    async def execute(self, key: str, *args: Any) -> None:
        await self.fetch(key, *args)

    async def _send_all(self) -> None:
        try:
            while self._waiting:
                batch = [c for c in self._waiting[:LIMIT] if not c.done.done()]  # not cancelled
                del self._waiting[:LIMIT]
                batch.sort(key=lambda c: c.key)
                if len(batch) == 1:
                    await self._alone(batch[0])
                elif batch:
                    await self._together(batch)
        finally:  # cancelled (the loop ends): nobody is left waiting for ever
            for call in self._waiting:
                call.done.cancel()
            self._waiting.clear()

    async def _alone(self, call: _Call) -> None:
        self.sent += 1
        metrics.store_round_trip(self.name, 1)
        try:
            rows = await self._send([call])
        except BaseException as exc:  # the caller's own outcome, whatever it is
            _fail(call, exc)
            if not isinstance(exc, Exception):
                raise
        else:
            _give(call, rows)

    async def _one_by_one(self, batch: Sequence[_Call]) -> None:
        """Each call of ``batch`` on its own: those of one key in their order (a later write of
        a thread lands after an earlier one, as in the batch), the keys side by side."""
        keys: dict[str, list[_Call]] = defaultdict(list)
        for call in batch:
            keys[call.key].append(call)
        await asyncio.gather(*(_in_turn(calls, self._alone) for calls in keys.values()))

    async def _together(self, batch: Sequence[_Call]) -> None:
        if len({c.key for c in batch}) < len(batch):
            for calls in _rounds(batch):  # a key twice: its calls in their order, in rounds
                await (self._together(calls) if len(calls) > 1 else self._alone(calls[0]))
            return
        self.sent += 1
        metrics.store_round_trip(self.name, len(batch))
        try:
            found = await self._send(batch)
        except asyncpg.PostgresError as exc:
            if _statements_error(exc):  # one statement failed and undid the batch: each on its own
                await self._one_by_one(batch)
                return
            for call in batch:  # the connection's: whether the batch committed is unknown
                _fail(call, exc)
            return
        except BaseException as exc:
            for call in batch:
                _fail(call, exc)
            if not isinstance(exc, Exception):
                raise
            return
        rows: dict[int, list[asyncpg.Record]] = defaultdict(list)
        for row in found:
            rows[row["call"]].append(row)
        for n, call in enumerate(batch):
            _give(call, rows.get(n, []))

    async def _send(self, batch: Sequence[_Call]) -> list[asyncpg.Record]:
        """One round trip for ``batch``: the rows it returns (each with its ``call``)."""
        args = self._statement.args([c.args for c in batch])
        if self._rows:
            return await self._pool().fetch(self._statement.sql, *args)
        await self._pool().execute(self._statement.sql, *args)
        return []


def _rounds(batch: Sequence[_Call]) -> list[list[_Call]]:
    """``batch`` as rounds with each key at most once: every key's first call, then its second..."""
    rounds: list[list[_Call]] = []
    seen: dict[str, int] = defaultdict(int)
    for call in batch:
        if seen[call.key] == len(rounds):
            rounds.append([])
        rounds[seen[call.key]].append(call)
        seen[call.key] += 1
    return rounds


async def _in_turn(calls: Sequence[_Call], alone: Callable[[_Call], Awaitable[None]]) -> None:
    for call in calls:
        await alone(call)


def _give(call: _Call, rows: list[asyncpg.Record]) -> None:
    if not call.done.done():
        call.done.set_result(rows)


def _fail(call: _Call, exc: BaseException) -> None:
    if call.done.done():
        return
    if isinstance(exc, Exception):
        call.done.set_exception(exc)
    else:
        call.done.cancel()


def _statements_error(exc: asyncpg.PostgresError) -> bool:
    """Whether ``exc`` is a statement's own failure, so the batch was undone and sending its
    calls again is safe; not so when the connection failed (lost, or the server shutting down):
    the batch may have committed before the answer was lost."""
    return not isinstance(exc, asyncpg.PostgresConnectionError | asyncpg.OperatorInterventionError)
