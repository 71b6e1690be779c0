"""OAuth sign-ins kept for MCP servers: sealed at rest, renewed after a restart, and a revoked
one is a sign-in needed again (never a crash), through the real connection and the fake
MCP and authorization servers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.config import McpOAuthSettings, McpServerSettings
from bot.errors import McpSignInNeeded
from bot.infra.clock import SystemClock
from bot.infra.sealed import sealer
from bot.mcp.auth import OAuthAccess
from bot.mcp.endpoint import HttpEndpoint
from bot.mcp.server import McpServer
from bot.mcp.tokens import Vault, state_of
from bot.storage.sqlite.store import SqliteStore
from tests.fakes.mcp_http import FakeMcpHttp
from tests.fakes.oauth_server import FakeOAuthServer

TOKEN = "fresh-access-token"


@pytest.fixture
async def servers() -> AsyncIterator[tuple[FakeMcpHttp, FakeOAuthServer]]:
    async with (
        FakeOAuthServer(token=TOKEN) as oauth,
        FakeMcpHttp(token=TOKEN, issuer=oauth.issuer) as mcp,
    ):
        yield mcp, oauth


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    opened = SqliteStore(tmp_path / "t.sqlite3")
    await opened.open()
    yield opened
    await opened.close()


async def at_rest(store: SqliteStore, home: Path) -> tuple[bool, str]:
    """Whether the sealed row shows the token, and the key file's mode."""
    kept = await store.sign_in("docs", "shared")
    assert kept is not None
    return b"secret-value" in kept.sealed, oct((home / "secret.key").stat().st_mode & 0o777)


def server_with(mcp: FakeMcpHttp, vault: Vault) -> McpServer:
    config = McpServerSettings(url=mcp.url, oauth=McpOAuthSettings(), timeout_s=10)
    access = OAuthAccess("docs", McpOAuthSettings(), vault.slot("docs"), "http://127.0.0.1:1/cb")
    return McpServer("docs", config, HttpEndpoint(mcp.url, {}, access), SystemClock())


async def test_a_sign_in_is_sealed_and_read_back_only_with_its_key(
    store: SqliteStore, tmp_path: Path
) -> None:
    vault = Vault(store, sealer(tmp_path, None))
    await vault.slot("docs").write({"tokens": {"access_token": "secret-value"}})
    assert await at_rest(store, tmp_path) == (False, "0o600")
    assert await vault.slot("docs").read() == {
        "tokens": {"access_token": "secret-value"},
        "subject": "shared",
    }
    other = Vault(store, sealer(tmp_path, "THREADLINE_SECRET_KEY set since"))
    assert await other.slot("docs").read() is None  # another key: a new sign-in is needed
    assert await vault.slot("docs", "slack:T1:U1").read() is None  # nobody else's


def test_the_state_of_a_sign_in_in_words() -> None:
    now = 1_800_000_000.0
    assert state_of(None, now) == "needs sign-in"
    assert state_of({"tokens": {}, "expires_at": now - 1}, now) == "needs sign-in"
    expired = {"tokens": {"access_token": "x"}, "expires_at": now - 1}
    assert state_of(expired, now) == "expired: needs sign-in again"
    renewable = {**expired, "refreshable": True}
    assert state_of(renewable, now).startswith("signed in (the access token expired")
    fine = {"tokens": {"access_token": "x"}, "expires_at": now + 60, "refreshable": True}
    assert state_of(fine, now) == "signed in (until 2027-01-15 08:01 UTC, renewed after)"


async def signed_in(mcp: FakeMcpHttp, oauth: FakeOAuthServer, vault: Vault, **over: object) -> None:
    """A sign-in as ``threadline mcp login`` leaves it (its tokens, client, the server's
    metadata), with ``over`` changed."""
    record = {
        "tokens": {
            "access_token": "old-access-token",
            "token_type": "Bearer",
            "refresh_token": "refresh-0",
            "expires_in": 3600,
        },
        "expires_at": time.time() + 3600,
        "refreshable": True,
        "client": {"client_id": "client-1", "redirect_uris": ["http://127.0.0.1:1/cb"]},
        "authorization_server": {
            "issuer": oauth.issuer,
            "authorization_endpoint": f"{oauth.issuer}/authorize",
            "token_endpoint": f"{oauth.issuer}/token",
            "revocation_endpoint": f"{oauth.issuer}/revoke",
        },
        **over,
    }
    await vault.slot("docs").write(record)


async def test_an_expired_sign_in_is_renewed_after_a_restart(
    servers: tuple[FakeMcpHttp, FakeOAuthServer], store: SqliteStore, tmp_path: Path
) -> None:
    mcp, oauth = servers
    vault = Vault(store, sealer(tmp_path, None))
    await signed_in(mcp, oauth, vault, expires_at=time.time() - 5)
    server = server_with(mcp, vault)
    try:
        assert await server.start(), server.last_error
    finally:
        await server.aclose()
    assert [r["grant_type"] for r in oauth.token_requests] == ["refresh_token"]
    assert oauth.token_requests[0]["refresh_token"] == "refresh-0"
    kept = await vault.slot("docs").read()
    assert kept is not None and kept["tokens"]["access_token"] == TOKEN
    assert not oauth.authorizations  # nobody was asked to sign in


async def test_a_revoked_sign_in_is_a_sign_in_needed_again(
    servers: tuple[FakeMcpHttp, FakeOAuthServer], store: SqliteStore, tmp_path: Path
) -> None:
    mcp, oauth = servers
    vault = Vault(store, sealer(tmp_path, None))
    await signed_in(mcp, oauth, vault)  # the server does not know "old-access-token"
    oauth.revoked.append("refresh-0")
    server = server_with(mcp, vault)
    try:
        assert not await server.start()
        with pytest.raises(McpSignInNeeded, match="a sign-in is needed"):
            await server.call("lookup", {"id": "T-1"})
    finally:
        await server.aclose()
    assert "`threadline mcp login docs`" in (server.last_error or "")
    assert "old-access-token" not in (server.last_error or "")


async def test_workers_sharing_a_store_share_the_sign_in_and_its_renewal(
    servers: tuple[FakeMcpHttp, FakeOAuthServer], store: SqliteStore, tmp_path: Path
) -> None:
    """Two workers on one store, the access token expired: both start at once, each renews
    or takes the other's renewal; neither asks anyone to sign in, and a fresh token is kept."""
    mcp, oauth = servers
    other = SqliteStore(tmp_path / "t.sqlite3")  # the second worker's connection
    await other.open()
    key = "the key every worker has"
    vault_a, vault_b = Vault(store, sealer(tmp_path, key)), Vault(other, sealer(tmp_path, key))
    await signed_in(mcp, oauth, vault_a, expires_at=time.time() - 5)
    worker_a, worker_b = server_with(mcp, vault_a), server_with(mcp, vault_b)
    try:
        started = await asyncio.gather(worker_a.start(), worker_b.start())
        assert started == [True, True], (worker_a.last_error, worker_b.last_error)
        await worker_b.call("lookup", {"id": "T-1"})
    finally:
        await worker_a.aclose()
        await worker_b.aclose()
        await other.close()
    assert 1 <= len(oauth.token_requests) <= 2
    assert {r["grant_type"] for r in oauth.token_requests} == {"refresh_token"}
    kept = await vault_a.slot("docs").read()
    assert kept is not None and kept["tokens"]["access_token"] == TOKEN
    assert kept["expires_at"] > time.time()
    assert not oauth.authorizations
