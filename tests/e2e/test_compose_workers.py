"""deploy/compose.yaml, run without Docker: its two workers as real ``threadline run`` processes
with the environment it and the image describe, started at the same moment on its PostgreSQL
(this machine's at 127.0.0.1:5432, a fresh database per test), both become ready, apply the
schema once, and answer ``/metrics``.

What only a container changes is changed here: the ``postgres`` host is 127.0.0.1 and the login
the test server's (trust authentication; the compose file's password is given and ignored), the
shared data volume is one temporary directory, each worker listens on 127.0.0.1 on a free port.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import asyncpg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.storage.postgres.store import migrations
from tests.deploy.dockerfile import env_of
from tests.deploy.test_compose import database, dockerfile, interpolate, workers
from tests.e2e.test_process_restart import free_port
from tests.postgres import ADMIN_URL, SKIPPED

WAIT = 60.0
STARTED = "HTTP server on"


@pytest.fixture
async def compose_database() -> AsyncIterator[str]:
    """A fresh database for this test, named after the compose file's; dropped at its end."""
    if SKIPPED:
        pytest.skip("THREADLINE_TEST_NO_POSTGRES=1: the PostgreSQL tests are skipped")
    _, db = database()
    name = f"{db['environment']['POSTGRES_DB']}_compose_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(ADMIN_URL, timeout=10)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        yield name
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


def outside_containers(url: str, database_name: str) -> str:
    """The worker's database URL with this machine's server in place of the ``postgres`` host."""
    admin = urlsplit(ADMIN_URL)
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, admin.netloc, f"/{database_name}", parts.query, ""))


@asynccontextmanager
async def worker(env: dict[str, str], home: Path) -> AsyncIterator[list[str]]:
    """``threadline run`` with ``env``; yields its output lines once its HTTP server serves."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        "run",
        cwd=home,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        async with asyncio.timeout(WAIT):
            while STARTED not in (line := (await proc.stdout.readline()).decode(errors="replace")):
                assert line, f"the worker exited before serving: {''.join(lines)}"
                lines.append(line)
        yield lines
    finally:
        if proc.returncode is None:
            proc.terminate()
        async with asyncio.timeout(WAIT):
            await proc.communicate()


async def test_the_compose_workers_start_together_on_its_database_and_are_ready(
    tmp_path: Path, compose_database: str
) -> None:
    image_env = env_of(dockerfile())
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "SLACK_", "DISCORD_", "THREADLINE_"))
    }
    volume = tmp_path / "threadline-data"  # the named volume both workers mount at /data
    config = tmp_path / "config"  # ./config, mounted read-only as the working directory
    config.mkdir()
    ports: dict[str, int] = {}
    async with AsyncExitStack() as stack:
        starting = []
        for name, described in workers().items():
            env = (
                base
                | image_env
                | {
                    k: interpolate(str(v), {"POSTGRES_PASSWORD": "compose-password"})
                    for k, v in described["environment"].items()
                }
            )
            assert (
                env["THREADLINE_DATA_DIR"] == "/data" and env["THREADLINE_HTTP_HOST"] == "0.0.0.0"
            )
            ports[name] = free_port()
            env |= {
                "THREADLINE_DATABASE_URL": outside_containers(
                    env["THREADLINE_DATABASE_URL"], compose_database
                ),
                "THREADLINE_DATA_DIR": str(volume),
                "THREADLINE_HTTP_HOST": "127.0.0.1",
                "THREADLINE_HTTP_PORT": str(ports[name]),
            }
            starting.append(stack.enter_async_context(worker(env, config)))
        started = await asyncio.gather(
            *starting, return_exceptions=True
        )  # at once, on an empty database
        for outcome in started:  # (every worker that did start is stopped by the stack)
            if isinstance(outcome, BaseException):
                raise outcome

        assert len(ports) == 2
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=WAIT)) as http:
            for port in ports.values():
                async with http.get(f"http://127.0.0.1:{port}/readyz") as response:
                    assert response.status == 200, await response.text()
                    assert (await response.json())["ready"] is True
                async with http.get(f"http://127.0.0.1:{port}/metrics") as response:
                    assert response.status == 200
                    names = {f.name for f in text_string_to_metric_families(await response.text())}
                assert {
                    "threadline_runs_started",
                    "threadline_platform_requests",
                    "process_cpu_seconds",
                } <= names

    admin = urlsplit(ADMIN_URL)
    conn = await asyncpg.connect(
        urlunsplit(("postgresql", admin.netloc, f"/{compose_database}", "", ""))
    )
    try:
        tables = {
            r["tablename"]
            for r in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        }
        applied = await conn.fetchval("SELECT count(*) FROM schema_migrations")
    finally:
        await conn.close()
    assert {"sessions", "messages", "approvals"} <= tables
    assert applied == len(
        migrations()
    )  # once each, though both workers started on an empty database
