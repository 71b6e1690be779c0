"""The store the settings ask for, and how it is named where people can read it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.config import Settings
from bot.errors import ConfigError, StoreError
from bot.infra.logs import RedactSecrets
from bot.storage.choose import store_for, store_label, store_problem
from bot.storage.postgres.store import PostgresStore
from bot.storage.sqlite.store import SqliteStore
from tests.fakes.config import configure

URL = "postgresql://bot:s3cret-pass@db.internal:5433/threadline"


def settings(tmp_path: Path, **values: str) -> Settings:
    return configure(data_dir=tmp_path, **values)[0]


def test_sqlite_when_no_database_url_is_set(tmp_path: Path) -> None:
    for unset in ({}, {"database_url": ""}):
        chosen = settings(tmp_path, **unset)
        assert isinstance(store_for(chosen), SqliteStore)
        assert store_label(chosen) == str(tmp_path / "threadline.sqlite3")


def test_a_database_url_selects_postgresql_named_without_its_password(tmp_path: Path) -> None:
    chosen = settings(tmp_path, database_url=URL)
    store = store_for(chosen)
    assert isinstance(store, PostgresStore)
    assert store.where == store_label(chosen) == "postgresql://bot@db.internal:5433/threadline"
    problem = store_problem(chosen, StoreError(f"cannot use PostgreSQL at {store.where}: refused"))
    assert (
        problem
        == "the store is unusable: cannot use PostgreSQL at postgresql://bot@db.internal:5433/threadline: refused"
    )
    assert "s3cret" not in repr(chosen)


def test_the_password_alone_is_redacted_from_the_log(tmp_path: Path) -> None:
    chosen = settings(tmp_path, database_url=URL)
    assert "s3cret-pass" in chosen.secrets() and URL in chosen.secrets()
    record = logging.LogRecord(
        "t", logging.INFO, __file__, 1, "login as bot with %s", ("s3cret-pass",), None
    )
    RedactSecrets(chosen.secrets()).filter(record)
    assert record.getMessage() == "login as bot with [redacted]"


@pytest.mark.parametrize("url", ["mysql://u:pw@h/db", "127.0.0.1:5432/db", "sqlite:///x"])
def test_a_url_that_is_not_postgresql_is_refused_naming_the_setting(
    tmp_path: Path, url: str
) -> None:
    from bot.config import load

    with pytest.raises(ConfigError) as refused:
        load(Settings, data_dir=tmp_path, database_url=url)
    assert refused.value.setting == "THREADLINE_DATABASE_URL"
    assert "postgresql://" in refused.value.problem and url not in str(refused.value)
