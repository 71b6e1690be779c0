"""Enterprise-managed authorization (SEP-990) as configuration: what it needs, and its ID
token read from the environment like every secret. The flow itself is driven end to end by
the MCP conformance suite (``auth/cross-app-access-complete-flow``)."""

from __future__ import annotations

from bot.config import McpOAuthSettings, McpServerSettings
from bot.mcp.auth import resolved
from bot.mcp.endpoint import secrets_of, sign_in

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
