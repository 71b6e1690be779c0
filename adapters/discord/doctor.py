"""``threadline doctor`` for Discord: the token, the bot's name, the Message Content intent,
the interactions endpoint, the gateway and the shards — in plain words, never the token."""

from __future__ import annotations

import asyncio
import re
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import discord
from discord.http import Route

from adapters.discord.config import DiscordSettings
from adapters.discord.endpoints import point_at, rest_base
from adapters.discord.invite import INTENT_HELP, client_id_from_token
from bot.api.kit import unreachable_reason
from bot.errors import ConfigError

Check = tuple[bool | None, str]
CONTENT = 1 << 18
CONTENT_LIMITED = 1 << 19
REFUSED = (
    "DISCORD_TOKEN was refused (401 Unauthorized): in the Developer Portal open your application "
    "→ Bot → Reset Token, and set DISCORD_TOKEN to the new token (without 'Bot ')"
)
MISSHAPEN = (
    "DISCORD_TOKEN does not look like a bot token, which is three parts joined by dots, the "
    "first the application's id in base64: copy it from the Developer Portal (your application "
    "→ Bot → Reset Token), without 'Bot '"
)
_BASE64URL = re.compile(r"^[A-Za-z0-9_-]+$")


async def check_discord(settings: DiscordSettings) -> list[Check]:
    if settings.discord_token is None:
        return [(None, "not configured (set DISCORD_TOKEN)")]
    try:
        token = settings.token()
    except ConfigError as exc:
        return [(False, str(exc))]
    if not well_shaped(token):
        return [(False, MISSHAPEN)]
    point_at(settings.discord_api_base, settings.discord_gateway_url)
    http = discord.http.HTTPClient(asyncio.get_running_loop())
    checks: list[Check] = []
    try:
        me = await http.static_login(token)
        checks.append((True, f"token accepted: the bot is {me['username']} (id {me['id']})"))
        app: dict[str, Any] = await http.request(Route("GET", "/applications/@me"))
        checks.extend(_application(app))
        recommended, url, limit = await http.get_bot_gateway()
        checks.append(
            (
                True,
                f"gateway {url} answers; {limit['remaining']} of {limit['total']} "
                "connection starts left today",
            )
        )
        checks.append(sharding(settings, recommended))
        checks.append((None, "invite link: run `threadline discord-invite`"))
    except discord.LoginFailure:
        checks.append((False, REFUSED))
    except discord.HTTPException as exc:
        checks.append((False, f"Discord answered {exc.status} ({exc.text or 'no details'})"))
    except (aiohttp.ClientError, OSError, discord.GatewayNotFound) as exc:
        checks.append((False, unreachable(exc, rest_base(settings.discord_api_base))))
    finally:
        await http.close()
    return checks


def well_shaped(token: str) -> bool:
    """A bot token's shape: three base64url parts joined by dots, the first the bot's id."""
    parts = token.split(".")
    shaped = len(parts) == 3 and all(_BASE64URL.match(part) for part in parts)
    return shaped and client_id_from_token(token) is not None


def unreachable(exc: BaseException, where: str) -> str:
    """Why Discord at ``where`` did not answer, in a sentence."""
    host = urlsplit(where).hostname or where
    reason = unreachable_reason(exc, host)
    if reason is None and isinstance(exc, discord.GatewayNotFound):
        reason = "it did not say where its gateway is"
    elif reason is None and isinstance(exc, TimeoutError):
        reason = "it did not answer in time"
    return f"could not reach Discord at {where}: {reason or str(exc) or type(exc).__name__}"


def _application(app: dict[str, Any]) -> list[Check]:
    flags = int(app.get("flags") or 0)
    checks: list[Check] = []
    if flags & (CONTENT | CONTENT_LIMITED):
        checks.append((True, "the Message Content intent is enabled"))
    else:
        checks.append((False, f"the Message Content intent is off. {INTENT_HELP}"))
    if app.get("interactions_endpoint_url"):
        checks.append(
            (
                False,
                "the application has an Interactions Endpoint URL: Discord sends "
                "buttons and slash commands there, not to this bot. Clear it under "
                "General Information in the Developer Portal",
            )
        )
    return checks


def sharding(settings: DiscordSettings, recommended: int) -> Check:
    """The shards this process connects, against the number Discord recommends."""
    try:
        shards = settings.shards()
    except ConfigError as exc:
        return False, f"shards: {exc}"
    advice = f"Discord recommends {recommended} shard{'s' if recommended > 1 else ''} for this bot"
    if shards is None:
        if recommended > 1:
            return (
                None,
                f"shards: one connection for every server; {advice}: set THREADLINE_DISCORD_SHARD_COUNT",
            )
        return None, f"shards: one connection for every server (no sharding; {advice})"
    others = "" if len(shards.ids) == shards.count else "; other processes must connect the rest"
    return True, f"shards: this process connects {shards.describe()} ({advice}){others}"
