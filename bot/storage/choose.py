"""The store the settings ask for: PostgreSQL when ``THREADLINE_DATABASE_URL`` is set, else
SQLite under the data directory."""

from __future__ import annotations

from bot.config import Settings
from bot.storage.protocol import Store
from bot.storage.sqlite.store import SqliteStore


def store_for(settings: Settings) -> Store:
    if settings.database_url is not None:
        from bot.storage.postgres.store import PostgresStore  # asyncpg is imported only when asked

        return PostgresStore(settings.database_url.get_secret_value())
    return SqliteStore(settings.database_path)


def store_label(settings: Settings) -> str:
    """Where the store is, as it may be shown (a database URL without its password)."""
    if settings.database_url is not None:
        from bot.storage.postgres.url import redacted

        return redacted(settings.database_url.get_secret_value())
    return str(settings.database_path)


def store_problem(settings: Settings, exc: Exception) -> str:
    """An unusable store in one line, naming where it is once."""
    label = store_label(settings)
    if label in str(exc):
        return f"the store is unusable: {exc}"
    return f"the store at {label} is unusable: {exc}"
