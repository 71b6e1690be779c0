"""Two workers on one PostgreSQL database share their MCP sign-ins: `threadline mcp login` on
one host, the sign-in used by `threadline mcp try` and seen by `list` on the other, and
`logout` on either forgets it for both, each command a real `threadline` process."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.adapters.test_cli import ROOT
from tests.adapters.test_mcp_oauth_command import configure, sign_in
from tests.fakes.mcp_http import FakeMcpHttp
from tests.fakes.oauth_server import FakeOAuthServer
from tests.postgres import fresh_schema, postgres_database

__all__ = ["postgres_database"]

TOKEN = "shared-access-token"
KEY = "one secret key every worker is given"


@pytest.fixture
async def servers() -> AsyncIterator[tuple[FakeMcpHttp, FakeOAuthServer]]:
    async with (
        FakeOAuthServer(token=TOKEN) as oauth,
        FakeMcpHttp(token=TOKEN, issuer=oauth.issuer) as mcp,
    ):
        yield mcp, oauth


async def start(home: Path, env: dict[str, str], *args: str) -> asyncio.subprocess.Process:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("THREADLINE_")}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        *args,
        cwd=home,
        env=clean | {"PYTHONPATH": str(ROOT), "THREADLINE_HTTP_PORT": "0"} | env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def run(home: Path, env: dict[str, str], *args: str) -> tuple[int, str]:
    proc = await start(home, env, *args)
    async with asyncio.timeout(60):
        out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode() + err.decode()


async def test_a_sign_in_made_on_one_worker_is_used_by_the_other(
    servers: tuple[FakeMcpHttp, FakeOAuthServer], postgres_database: str, tmp_path: Path
) -> None:
    mcp, oauth = servers
    shared = {"THREADLINE_DATABASE_URL": await fresh_schema(postgres_database)}
    host_a, host_b = tmp_path / "a", tmp_path / "b"
    for home in (host_a, host_b):
        home.mkdir()
        configure(home, mcp.url)
    env = shared | {"THREADLINE_SECRET_KEY": KEY}

    login = await start(host_a, env, "mcp", "login", "docs")
    printed, _ = await sign_in(login)
    async with asyncio.timeout(60):
        out, err = await login.communicate()
    assert login.returncode == 0, printed + out.decode() + err.decode()

    code, listed = await run(host_b, env, "mcp", "list")
    assert "  signed in: signed in (until" in listed and code == 0, listed
    code, tried = await run(host_b, env, "mcp", "try", "docs", "lookup", '{"id": "T-2"}')
    assert "T-2: printer on fire (open)" in tried and code == 0, tried
    assert len(oauth.authorizations) == 1  # nobody signed in on host B

    code, doctor = await run(host_b, env, "doctor")
    assert "MCP server docs: signed in: signed in (until" in doctor, doctor
    assert "THREADLINE_SECRET_KEY on every worker" not in doctor

    # a worker that seals with its own key file cannot read the others' sign-ins: said so
    code, doctor = await run(host_b, shared, "doctor")
    assert "set the same THREADLINE_SECRET_KEY on every worker" in doctor, doctor
    assert "MCP server docs: signed in: needs sign-in" in doctor

    code, out_text = await run(host_b, env, "mcp", "logout", "docs")
    assert "revoked at the authorization server, and deleted here" in out_text, out_text
    code, listed = await run(host_a, env, "mcp", "list")
    assert "needs sign-in" in listed
    everything = printed + out.decode() + err.decode() + listed + tried + doctor + out_text
    assert TOKEN not in everything and "refresh-1" not in everything
