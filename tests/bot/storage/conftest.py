"""Every store implementation, for the contract suite: a test that takes ``store`` runs on each.

Each implementation is in ``IMPLEMENTATIONS``; ``reopen`` closes a store and opens a new one on
the same data, as a restart would. PostgreSQL runs on the local server (``tests/postgres.py``): a
database for the test run, a schema for each test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from bot.storage.postgres.store import PostgresStore
from bot.storage.protocol import Store
from bot.storage.sqlite.store import SqliteStore
from tests.postgres import fresh_schema, postgres_database

__all__ = ["postgres_database"]

Opener = Callable[[], Awaitable[Store]]


def _sqlite(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    path = tmp_path / "data" / "t.sqlite3"

    async def open_store() -> Store:
        store = SqliteStore(path)
        await store.open()
        return store

    return open_store


def _postgres(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    database: str = request.getfixturevalue("postgres_database")
    url: list[str] = []

    async def open_store() -> Store:
        if not url:
            url.append(await fresh_schema(database))
        store = PostgresStore(url[0])
        await store.open()
        return store

    return open_store


IMPLEMENTATIONS = {"sqlite": _sqlite, "postgres": _postgres}
LEASE_IMPLEMENTATIONS = {"postgres": _postgres}
"""Stores that also keep leases per thread (:class:`bot.storage.leases.LeaseStore`)."""


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    return IMPLEMENTATIONS[request.param](request, tmp_path)


class Stores:
    """Opens the store under test, again after a restart, and closes what it opened."""

    def __init__(self, opener: Opener) -> None:
        self._opener = opener
        self._open: list[Store] = []

    async def open(self) -> Store:
        store = await self._opener()
        self._open.append(store)
        return store

    async def reopen(self, store: Store) -> Store:
        await store.close()
        return await self.open()

    async def close(self) -> None:
        for store in self._open:
            await store.close()


@pytest.fixture
async def stores(opener: Opener) -> AsyncIterator[Stores]:
    kept = Stores(opener)
    yield kept
    await kept.close()


@pytest.fixture
async def store(stores: Stores) -> Store:
    return await stores.open()


@pytest.fixture(params=sorted(LEASE_IMPLEMENTATIONS))
def lease_opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """Synchronous, like :func:`opener`: the session's database is created (``asyncio.run``)
    outside the test's event loop even when this is the first PostgreSQL test of the run."""
    return LEASE_IMPLEMENTATIONS[request.param](request, tmp_path)


@pytest.fixture
async def workers(lease_opener: Opener) -> AsyncIterator[Stores]:
    """Stores with leases, each :meth:`Stores.open` a worker on the same data."""
    kept = Stores(lease_opener)
    yield kept
    await kept.close()
