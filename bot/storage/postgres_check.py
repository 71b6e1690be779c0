"""``threadline doctor``'s look at the PostgreSQL database: does it answer, and at which schema
version (read only: start-up is what migrates it)."""

from __future__ import annotations

import asyncpg

from bot.storage.postgres import CONNECT_TIMEOUT_S, migrations
from bot.storage.postgres_url import describe_failure, redacted


async def check_database(url: str) -> tuple[bool, str]:
    """``(ok, words)`` about the database at ``url``, naming it without its password."""
    try:
        conn = await asyncpg.connect(url, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError, ValueError) as exc:
        return False, describe_failure(url, exc)
    try:
        server = str(await conn.fetchval("SHOW server_version")).split()[0]
        version = 0
        if await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL"):
            version = int(await conn.fetchval("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"))
    except asyncpg.PostgresError as exc:
        return False, describe_failure(url, exc)
    finally:
        await conn.close()
    newest = migrations()[-1][0]
    answers = f"PostgreSQL {server} at {redacted(url)} answers"
    if version > newest:
        return False, (
            f"{answers}, but its schema version {version} is newer than this Threadline knows "
            f"({newest}): upgrade Threadline or use another database"
        )
    if version == 0:
        return True, f"{answers}; no tables yet: `threadline run` creates them (schema version {newest})"
    if version < newest:
        return True, f"{answers}; schema version {version}: `threadline run` brings it to {newest}"
    return True, f"{answers}; schema version {version} (current)"
