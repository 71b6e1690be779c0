"""``threadline doctor`` for Discord: the token, the bot's name, the Message Content intent,
the interactions endpoint, the gateway and the shards — in plain words, never the token."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import discord
from discord.http import Route

from adapters.discord.config import DiscordSettings
from adapters.discord.endpoints import point_at, rest_base
from adapters.discord.invite import INTENT_HELP
from bot.errors import ConfigError

Check = tuple[bool | None, str]
CONTENT = 1 << 18
CONTENT_LIMITED = 1 << 19
REFUSED = (
    "DISCORD_TOKEN was refused (401 Unauthorized): in the Developer Portal open your application "
    "→ Bot → Reset Token, and set DISCORD_TOKEN to the new token (without 'Bot ')"
)


async def check_discord(settings: DiscordSettings) -> list[Check]:
    if settings.discord_token is None:
        return [(None, "not configured (set DISCORD_TOKEN)")]
    point_at(settings.discord_api_base, settings.discord_gateway_url)
    http = discord.http.HTTPClient(asyncio.get_running_loop())
    checks: list[Check] = []
    try:
        me = await http.static_login(settings.discord_token.get_secret_value().strip())
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
        where = rest_base(settings.discord_api_base)
        checks.append((False, f"could not reach Discord at {where}: {type(exc).__name__} {exc}"))
    finally:
        await http.close()
    return checks


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
