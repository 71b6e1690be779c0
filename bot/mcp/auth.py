"""Signing in to an MCP server with OAuth 2.1, in our own terms (the SDK's flow is driven in
:mod:`bot.mcp.sdk.oauth`): where the sign-in is kept, who opens the sign-in link, and where
the authorization server sends the browser back.

A :class:`Browser` is whatever takes a person (or, for test servers, nobody) through the link:
``threadline mcp login`` prints it and waits for the callback on a local port; in a thread
there is no browser at hand, so a missing sign-in ends the call with
:class:`~bot.errors.McpSignInNeeded` and the person is shown the link.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from bot.config import PLACEHOLDER, McpOAuthSettings
from bot.mcp.tokens import Slot

CALLBACK_PATH = "/mcp/oauth/callback"
Exchange = dict[str, Any]
"""What exchanging a sign-in's code needs without the flow that made its link (after a
restart): the PKCE verifier, the redirect URI, the client, the authorization server's and the
resource's metadata. It holds secrets: kept sealed (:mod:`bot.mcp.sign_in_waits`)."""


class SignInFailed(Exception):
    """A sign-in went wrong: the words say how (never a token)."""


@dataclass(frozen=True, slots=True)
class Authorized:
    """What the authorization server sent the browser back with."""

    code: str
    state: str | None
    iss: str | None = None


class Browser(Protocol):
    """Takes a sign-in link to the person and brings back what the callback carried."""

    @property
    def redirect_uri(self) -> str: ...

    async def authorize(self, link: str, exchange: Exchange | None = None) -> Authorized:
        """``exchange``: what the code's exchange needs, should it come back after a restart."""
        ...


@dataclass(frozen=True, slots=True)
class OAuthAccess:
    """How one connection signs in: the server's settings (secrets read from the
    environment), the sign-in it uses, and the browser for a new sign-in (None: none can be
    made here; a missing one is :class:`~bot.errors.McpSignInNeeded`)."""

    server: str
    settings: McpOAuthSettings
    slot: Slot
    redirect_uri: str
    browser: Browser | None = None
    person: str | None = None
    """Whose sign-in (a per-person server), None for the shared one."""


def resolved(settings: McpOAuthSettings, environ: Mapping[str, str]) -> McpOAuthSettings:
    """``settings`` with each ``${NAME}`` read from ``environ`` (a missing one: KeyError)."""

    def read(value: str | None) -> str | None:
        return None if value is None else PLACEHOLDER.sub(lambda m: environ[m.group(1)], value)

    return settings.model_copy(
        update={
            "client_secret": read(settings.client_secret),
            "private_key": read(settings.private_key),
            "idp_client_secret": read(settings.idp_client_secret),
            "id_token": read(settings.id_token),
        }
    )


def callback_url(public_url: str | None, host: str, port: int) -> str:
    """Where the bot's HTTP server takes sign-ins back."""
    base = public_url or f"http://{host}:{port}"
    return base.rstrip("/") + CALLBACK_PATH
