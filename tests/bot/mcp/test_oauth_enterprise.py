"""Enterprise-managed authorization (SEP-990): what it needs as configuration, its ID token
read from the environment like every secret, and the flow through the real connection against
a fake identity provider, a fake authorization server and the fake MCP server over HTTP — the
token exchange (RFC 8693), the jwt-bearer grant (RFC 7523), the call with the access token —
and each refusal in words that hold no secret, in the error and in the log. (The MCP
conformance suite drives it too: ``auth/cross-app-access-complete-flow``.)"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from bot.config import McpOAuthSettings, McpServerSettings, Settings
from bot.infra.clock import SystemClock
from bot.mcp.auth import OAuthAccess, resolved
from bot.mcp.endpoint import HttpEndpoint, secrets_of, sign_in
from bot.mcp.server import McpServer
from bot.mcp.tokens import MemorySlot
from tests.adapters.test_cli import threadline
from tests.fakes.identity_provider import FakeIdentityProvider
from tests.fakes.mcp_http import FakeMcpHttp
from tests.fakes.oauth_server import JWT_BEARER, FakeOAuthServer

COMPLETE = {
    "grant": "enterprise",
    "client_id": "bot",
    "client_secret": "${AS_SECRET}",
    "authorization_server": "https://auth.example.com",
    "idp_token_endpoint": "https://idp.example.com/token",
    "id_token": "${BOT_ID_TOKEN}",
}


def test_the_enterprise_grant_says_what_it_lacks() -> None:
    assert McpOAuthSettings.model_validate(COMPLETE).problem() is None
    lacking = {k: v for k, v in COMPLETE.items() if k not in ("id_token", "authorization_server")}
    assert McpOAuthSettings.model_validate(lacking).problem() == (
        "the enterprise grant needs authorization_server, id_token"
    )
    per_person = McpOAuthSettings.model_validate(COMPLETE | {"sign_in": "per_person"})
    assert per_person.problem() == (
        "the enterprise grant signs in with one ID token: use sign_in = shared"
    )


def test_the_id_token_is_a_secret_read_from_the_environment() -> None:
    environ = {"AS_SECRET": "s3cret", "BOT_ID_TOKEN": "eyJ.id.token"}
    settings = McpOAuthSettings.model_validate(COMPLETE)
    assert resolved(settings, environ).id_token == "eyJ.id.token"
    server = McpServerSettings(url="https://mcp.example.com/mcp", oauth=settings)
    assert sorted(secrets_of(server, environ)) == ["eyJ.id.token", "s3cret"]
    assert sign_in(server) == "OAuth, shared (enterprise)"


ID_TOKEN = "eyJ.the-id-token.sig"
AS_SECRET = "as-secret-0123456789"
IDP_SECRET = "idp-secret-0123456789"
GRANT = "eyJ.the-id-jag.sig"
ACCESS = "enterprise-access-token-0123"
ENVIRON = {"AS_SECRET": AS_SECRET, "BOT_ID_TOKEN": ID_TOKEN, "IDP_SECRET": IDP_SECRET}
SECRETS = (ID_TOKEN, AS_SECRET, IDP_SECRET, GRANT, ACCESS)


def basic(user: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode()


@dataclass
class Enterprise:
    idp: FakeIdentityProvider
    oauth: FakeOAuthServer
    mcp: FakeMcpHttp

    def server(self, **over: Any) -> McpServer:
        """The MCP server signing in with the enterprise grant (``over``: other settings)."""
        configured = {
            "grant": "enterprise",
            "client_id": "bot",
            "client_secret": "${AS_SECRET}",
            "authorization_server": self.oauth.issuer,
            "idp_token_endpoint": self.idp.token_endpoint,
            "idp_client_id": "bot-at-idp",
            "idp_client_secret": "${IDP_SECRET}",
            "id_token": "${BOT_ID_TOKEN}",
            "scope": "tickets.read",
        } | over
        settings = McpOAuthSettings.model_validate(
            {k: v for k, v in configured.items() if v is not None}
        )
        config = McpServerSettings(url=self.mcp.url, oauth=settings, timeout_s=10)
        access = OAuthAccess(
            "docs", resolved(settings, ENVIRON), MemorySlot(), "http://127.0.0.1:1/cb"
        )
        return McpServer("docs", config, HttpEndpoint(self.mcp.url, {}, access), SystemClock())


@pytest.fixture
async def enterprise() -> AsyncIterator[Enterprise]:
    async with (
        FakeIdentityProvider(grant=GRANT) as idp,
        FakeOAuthServer(token=ACCESS, assertion=GRANT, client=("bot", AS_SECRET)) as oauth,
        FakeMcpHttp(token=ACCESS, issuer=oauth.issuer) as mcp,
    ):
        yield Enterprise(idp, oauth, mcp)


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Every log line of every logger, from DEBUG up."""
    caplog.set_level(logging.DEBUG)
    return caplog


def leaked(*texts: str | None) -> list[str]:
    """The secrets that show in ``texts``."""
    return [s for s in SECRETS if any(s in (t or "") for t in texts)]


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
async def test_the_id_token_is_exchanged_then_granted_then_the_server_is_called_with_the_token(
    enterprise: Enterprise, logged: pytest.LogCaptureFixture, method: str
) -> None:
    e = enterprise
    server = e.server(token_endpoint_auth_method=method)
    try:
        assert await server.start(), server.last_error
        await server.call("lookup", {"id": "T-1"})
    finally:
        await server.aclose()
    assert e.idp.requests == [
        {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "subject_token": ID_TOKEN,
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "audience": e.oauth.issuer,
            "resource": e.mcp.url,
            "scope": "tickets.read",
        }
    ]
    assert e.idp.authorizations == [basic("bot-at-idp", IDP_SECRET)]
    [granted] = e.oauth.token_requests
    assert granted["grant_type"] == JWT_BEARER and granted["assertion"] == GRANT
    assert granted["client_id"] == "bot" and granted["resource"] == e.mcp.url
    assert granted["scope"] == "tickets.read"
    if method == "client_secret_basic":
        assert e.oauth.token_headers == [basic("bot", AS_SECRET)]
        assert "client_secret" not in granted
    else:
        assert e.oauth.token_headers == [None] and granted["client_secret"] == AS_SECRET
    assert ("lookup", ACCESS) in e.mcp.called_with
    assert not e.oauth.registered and not e.oauth.authorizations  # no registration, no browser
    assert not leaked(logged.text)


async def test_a_public_client_at_the_identity_provider_names_itself_in_the_form(
    enterprise: Enterprise,
) -> None:
    e = enterprise
    server = e.server(idp_client_secret=None)
    try:
        assert await server.start(), server.last_error
    finally:
        await server.aclose()
    assert e.idp.authorizations == [None]
    assert e.idp.requests[0]["client_id"] == "bot-at-idp"


async def test_the_identity_providers_refusal_is_a_sign_in_failure_without_the_token(
    enterprise: Enterprise, logged: pytest.LogCaptureFixture
) -> None:
    e = enterprise
    e.idp.refuse = True  # its description repeats the ID token
    server = e.server()
    try:
        assert not await server.start()
    finally:
        await server.aclose()
    assert "the identity provider refused the token exchange (HTTP 400: invalid_grant)" in (
        server.last_error or ""
    )
    assert not e.oauth.token_requests and not e.mcp.called_with
    assert not leaked(server.last_error, logged.text)


async def test_the_authorization_servers_refusal_is_a_sign_in_failure_without_the_grant(
    enterprise: Enterprise, logged: pytest.LogCaptureFixture
) -> None:
    e = enterprise
    e.oauth.assertion = "eyJ.another-grant.sig"  # its description repeats the grant it got
    server = e.server()
    try:
        assert not await server.start()
    finally:
        await server.aclose()
    assert (
        "the authorization server refused the identity assertion grant (HTTP 400: invalid_grant)"
        in (server.last_error or "")
    )
    assert len(e.idp.requests) == 1 and not e.mcp.called_with
    assert not leaked(server.last_error, logged.text)


def test_an_enterprise_server_without_its_id_token_is_a_configuration_error(
    tmp_path: Path,
) -> None:
    lacking = {k: v for k, v in COMPLETE.items() if k != "id_token"}
    server = {"url": "https://mcp.example.com/mcp", "oauth": lacking}
    with pytest.raises(ValidationError, match="the enterprise grant needs id_token"):
        Settings(data_dir=tmp_path, mcp_servers={"docs": server})

    def toml(oauth: dict[str, str]) -> str:
        lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in oauth.items())
        return f'[mcp_servers.docs]\nurl = "https://mcp.example.com/mcp"\n[mcp_servers.docs.oauth]\n{lines}'

    (tmp_path / "threadline.toml").write_text(toml(lacking))
    out = threadline("doctor", cwd=tmp_path, env={"AS_SECRET": AS_SECRET})
    said = out.stdout + out.stderr
    assert "mcp_servers" in said and "the enterprise grant needs id_token" in said
    assert out.returncode != 0 and "Traceback" not in said
    (tmp_path / "threadline.toml").write_text(toml(COMPLETE))  # named, but not in the environment
    out = threadline("doctor", cwd=tmp_path, env={"AS_SECRET": AS_SECRET})
    said = out.stdout + out.stderr
    assert "the environment variable BOT_ID_TOKEN is not set" in said
    assert out.returncode != 0 and AS_SECRET not in said and "Traceback" not in said
