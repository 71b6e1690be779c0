"""Where discord.py sends its requests: ``DISCORD_API_BASE`` and ``DISCORD_GATEWAY_URL``.

discord.py has no per-client setting for either: every REST URL (webhooks and interaction
callbacks included) is built from the class attribute ``discord.http.Route.BASE``, and a plain
``Client`` opens the gateway at ``DiscordWebSocket.DEFAULT_GATEWAY`` (also where it returns after
an invalidated session; resumes go to the ``resume_gateway_url`` Discord sends in READY). This
module is the one place that sets them, for the whole process: every Discord client in a
process talks to the same Discord. Unset settings restore discord.py's defaults.

Attachments are downloaded only from Discord's CDN hosts (:data:`CDN_HOSTS`, over HTTPS) or
from the origin of ``DISCORD_API_BASE`` (a test's fake Discord): :func:`from_discord`.
"""

from __future__ import annotations

import re

import yarl
from discord.gateway import DiscordWebSocket
from discord.http import INTERNAL_API_VERSION, Route

from bot.api.kit import origin_of

DEFAULT_API_BASE = Route.BASE
DEFAULT_GATEWAY = DiscordWebSocket.DEFAULT_GATEWAY
_VERSIONED = re.compile(r"/v\d+$")
CDN_HOSTS = frozenset({"cdn.discordapp.com", "media.discordapp.net"})
"""Where Discord serves attachments (their URLs are signed; no token is sent)."""
CDN_ORIGINS = frozenset(f"https://{host}" for host in CDN_HOSTS)


def rest_base(api_base: str | None) -> str:
    """The REST base with the API version: ``https://host/api`` → ``https://host/api/v10``."""
    if not api_base:
        return DEFAULT_API_BASE
    base = api_base.rstrip("/")
    return base if _VERSIONED.search(base) else f"{base}/v{INTERNAL_API_VERSION}"


def point_at(api_base: str | None, gateway_url: str | None) -> None:
    """Send discord.py's REST calls to ``api_base`` and its gateway connections to ``gateway_url``."""
    Route.BASE = rest_base(api_base)
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url) if gateway_url else DEFAULT_GATEWAY


def from_discord(url: str) -> bool:
    """Whether ``url`` is on Discord's CDN over HTTPS, or at the origin of the REST base in use."""
    origin = origin_of(url)
    return origin is not None and (origin in CDN_ORIGINS or origin == origin_of(Route.BASE))
