"""What the PostgreSQL store's table mixins need of it: the pool and write transactions."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Protocol, TypeAlias

import asyncpg

if TYPE_CHECKING:  # subscriptable in asyncpg's stubs only
    from asyncpg.pool import PoolConnectionProxy

    from bot.storage.postgres.batch import AsOne, Gathered

    Conn: TypeAlias = PoolConnectionProxy[asyncpg.Record]
    """A connection of the pool."""


class PgDb(Protocol):
    @property
    def pool(self) -> asyncpg.Pool: ...

    def transaction(self) -> AbstractAsyncContextManager[Conn]: ...

    def gathered(self, name: str, statement: AsOne, *, rows: bool) -> Gathered:
        """The calls of the statement ``name``, gathered into batches (see
        :mod:`bot.storage.postgres.batch`)."""
        ...
