"""Which authorization-server metadata a sign-in accepts: the issuer must be the server it was
read from (RFC 8414 section 3.3), except on the 2025-03-26 fallback, where the MCP server's own
origin may name an issuer on that same origin."""

from __future__ import annotations

from collections.abc import Callable

import httpx2
import pytest
from mcp.client.auth import OAuthFlowError

from bot.config import McpOAuthSettings
from bot.mcp.auth import OAuthAccess
from bot.mcp.sdk.oauth import _CodeFlow, _Storage
from bot.mcp.tokens import MemorySlot

MCP = "https://mcp.example.com/mcp"
Answer = Callable[[httpx2.Request], httpx2.Response]


def metadata(issuer: str) -> dict[str, object]:
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{issuer}/authorize",
        "token_endpoint": f"{issuer}/token",
        "registration_endpoint": f"{issuer}/register",
        "response_types_supported": ["code"],
    }


def legacy(issuer: str) -> Answer:
    """An MCP server with no protected-resource metadata, its authorization server's metadata
    at its root naming ``issuer``."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/.well-known/oauth-authorization-server":
            return httpx2.Response(200, json=metadata(issuer), request=request)
        return httpx2.Response(404, request=request)

    return answer


def modern(named: str, issuer: str) -> Answer:
    """An MCP server whose protected-resource metadata names ``named``, whose metadata (at
    ``named``'s root) says ``issuer``."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/.well-known/oauth-protected-resource/mcp":
            body = {"resource": MCP, "authorization_servers": [named]}
            return httpx2.Response(200, json=body, request=request)
        if str(request.url) == f"{named}/.well-known/oauth-authorization-server":
            return httpx2.Response(200, json=metadata(issuer), request=request)
        return httpx2.Response(404, request=request)

    return answer


async def first_step_after_discovery(answer: Answer) -> httpx2.Request:
    """Drive a sign-in from the MCP server's 401 until it asks for something other than
    metadata (the client's registration), answering each request with ``answer``."""
    access = OAuthAccess("docs", McpOAuthSettings(), MemorySlot(), "http://127.0.0.1:1/cb")
    flow = _CodeFlow(MCP, access, _Storage(access.slot)).async_auth_flow(
        httpx2.Request("POST", MCP)
    )
    outgoing = await flow.__anext__()
    response = httpx2.Response(401, request=outgoing)
    try:
        while True:
            outgoing = await flow.asend(response)
            if "/.well-known/" not in outgoing.url.path:
                return outgoing
            response = answer(outgoing)
    finally:
        await flow.aclose()


async def test_the_fallback_takes_an_issuer_on_the_mcp_servers_own_origin() -> None:
    registering = await first_step_after_discovery(legacy("https://mcp.example.com/oauth"))
    assert str(registering.url) == "https://mcp.example.com/oauth/register"


@pytest.mark.parametrize(
    "answer",
    [
        legacy("https://auth.example.com/oauth"),  # another host
        legacy("http://mcp.example.com/oauth"),  # another scheme
        legacy("https://mcp.example.com:8443/oauth"),  # another port
        modern("https://auth.example.com", "https://elsewhere.example.com"),
        modern("https://mcp.example.com", "https://mcp.example.com/oauth"),  # named: exact
    ],
    ids=["legacy-host", "legacy-scheme", "legacy-port", "named-origin", "named-path"],
)
async def test_an_issuer_the_metadata_was_not_read_from_is_refused(answer: Answer) -> None:
    with pytest.raises(OAuthFlowError, match="issuer mismatch"):
        await first_step_after_discovery(answer)
