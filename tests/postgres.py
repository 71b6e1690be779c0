"""The local PostgreSQL server for the tests: a fresh database per test run, a fresh schema per
test.

The server is the one at ``THREADLINE_TEST_POSTGRES`` (default
``postgresql://postgres@127.0.0.1:5432/postgres``, trust authentication; ``.ci/run`` starts it).
When it cannot be reached the tests that need it fail, saying so, unless
``THREADLINE_TEST_NO_POSTGRES=1`` skips them.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Iterator

import asyncpg
import pytest

ADMIN_URL = os.environ.get(
    "THREADLINE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
)
SKIPPED = os.environ.get("THREADLINE_TEST_NO_POSTGRES") == "1"


def url_of(database: str, schema: str | None = None) -> str:
    """The URL of ``database`` on the test server, with its tables in ``schema`` if given."""
    base = ADMIN_URL.rsplit("/", 1)[0] + f"/{database}"
    return f"{base}?search_path={schema}" if schema else base


async def _admin(sql: str) -> None:
    conn = await asyncpg.connect(ADMIN_URL, timeout=10)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """The name of a database created for this test run (dropped at its end)."""
    if SKIPPED:
        pytest.skip("THREADLINE_TEST_NO_POSTGRES=1: the PostgreSQL tests are skipped")
    name = f"threadline_test_{secrets.token_hex(4)}"
    try:
        asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    except (OSError, TimeoutError, asyncpg.PostgresError) as exc:
        pytest.fail(
            f"PostgreSQL is not reachable at {ADMIN_URL} ({exc!r}); start it (.ci/run shows how) "
            "or set THREADLINE_TEST_NO_POSTGRES=1 to skip these tests",
            pytrace=False,
        )
    yield name
    asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def fresh_schema(database: str) -> str:
    """A new, empty schema in ``database``; its URL (see :func:`url_of`)."""
    schema = f"t_{secrets.token_hex(6)}"
    conn = await asyncpg.connect(url_of(database), timeout=10)
    try:
        await conn.execute(f'CREATE SCHEMA "{schema}"')
    finally:
        await conn.close()
    return url_of(database, schema)
