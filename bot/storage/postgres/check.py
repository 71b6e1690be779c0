"""``threadline doctor``'s look at the PostgreSQL database: does it answer, at which schema
version (read only: start-up is what migrates it), and with which of the store's connection
settings (:data:`bot.storage.postgres.store.PLANNER`) the URL changed."""

from __future__ import annotations

import asyncpg

from bot.storage.postgres.store import CONNECT_TIMEOUT_S, PLANNER, migrations, server_settings
from bot.storage.postgres.url import describe_failure, redacted


async def check_database(url: str) -> tuple[bool, str]:
    """``(ok, words)`` about the database at ``url``, naming it without its password."""
    try:
        conn = await asyncpg.connect(
            url, timeout=CONNECT_TIMEOUT_S, server_settings=server_settings(url)
        )
    except (
        OSError,
        TimeoutError,
        asyncpg.PostgresError,
        asyncpg.InterfaceError,
        ValueError,
    ) as exc:
        return False, describe_failure(url, exc)
    try:
        server = str(await conn.fetchval("SHOW server_version")).split()[0]
        settings = {name: str(await conn.fetchval(f"SHOW {name}")) for name in PLANNER}
        version = 0
        if await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL"):
            version = int(
                await conn.fetchval("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
            )
    except asyncpg.PostgresError as exc:
        return False, describe_failure(url, exc)
    finally:
        await conn.close()
    newest = migrations()[-1][0]
    answers = f"PostgreSQL {server} at {redacted(url)} answers"
    if ours := [f"{name} {value}" for name, value in settings.items() if value != PLANNER[name]]:
        answers += f" (the URL sets {', '.join(ours)}, over the bot's own)"
    if version > newest:
        return False, (
            f"{answers}, but its schema version {version} is newer than this Threadline knows "
            f"({newest}): upgrade Threadline or use another database"
        )
    if version == 0:
        return (
            True,
            f"{answers}; no tables yet: `threadline run` creates them (schema version {newest})",
        )
    if version < newest:
        return True, f"{answers}; schema version {version}: `threadline run` brings it to {newest}"
    return True, f"{answers}; schema version {version} (current)"
