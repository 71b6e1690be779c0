"""The Discord adapter's life: log in, keep the gateway connection, stop cleanly.

``start`` logs in (a refused token is a configuration error, reported at once) and runs the
gateway connection in a task the adapter owns. If Discord refuses the Message Content intent
(close code 4014), the adapter says exactly what to switch on and connects again without it:
mentions and direct messages keep working.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import discord
from aiohttp import web

from adapters.discord.bridge import Bridge
from adapters.discord.client import ThreadlineClient
from adapters.discord.endpoints import point_at
from bot.config import Settings
from bot.core import Core
from bot.errors import ConfigError

log = logging.getLogger(__name__)

STOP_GRACE = 5.0
KEY_PREFIX = "discord:"
RETRY_FIRST = 1.0
RETRY_MAX = 60.0
MESSAGE_CONTENT_OFF = (
    "Discord refused the Message Content intent (gateway close code 4014). Switch it on in the "
    "Discord Developer Portal: your application → Bot → Privileged Gateway Intents → Message "
    "Content Intent, then restart Threadline. Until then the bot answers mentions and direct "
    "messages only: in a thread, people must mention it to be read."
)
BAD_TOKEN = (
    "Discord refused this token (401 Unauthorized). In the Developer Portal open your "
    "application → Bot → Reset Token, and set DISCORD_TOKEN to the new token (without 'Bot ')."
)


def _token(settings: Settings) -> str:
    if settings.discord_token is None:
        raise ConfigError("DISCORD_TOKEN", "is not set")
    token = settings.discord_token.get_secret_value().strip()
    if not token or any(c.isspace() for c in token):
        raise ConfigError("DISCORD_TOKEN", "must be the bot token alone, without spaces")
    if token.lower().startswith("bot "):
        raise ConfigError("DISCORD_TOKEN", "give the token without the 'Bot ' prefix")
    return token


class DiscordAdapter:
    def __init__(self, core: Core, settings: Settings, *, stop_grace: float = STOP_GRACE) -> None:
        self._token = _token(settings)
        self._settings = settings
        self._stop_grace = stop_grace
        self.bridge = Bridge(core, core.clock)
        self._client: ThreadlineClient | None = None
        self._runner: asyncio.Task[None] | None = None

    def install(self, app: web.Application) -> None:
        """Discord needs no HTTP route: everything arrives over the gateway."""

    @property
    def client(self) -> ThreadlineClient | None:
        return self._client

    async def start(self) -> None:
        point_at(self._settings.discord_api_base, self._settings.discord_gateway_url)
        self._client = await self._login(message_content=True)
        self.bridge.core.register_surfaces(KEY_PREFIX, self.bridge.surface_for_key)
        self._runner = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        await self.bridge.drain(self._stop_grace)
        if self._client is not None:
            await self._client.close()
        if self._runner is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner

    async def _login(self, *, message_content: bool) -> ThreadlineClient:
        client = ThreadlineClient(self.bridge, self._settings.data_dir, message_content=message_content)
        try:
            await client.login(self._token)
        except discord.LoginFailure:
            await client.close()
            raise ConfigError("DISCORD_TOKEN", BAD_TOKEN) from None
        except BaseException:
            await client.close()
            raise
        self.bridge.client = client
        return client

    async def _run(self) -> None:
        """Keep the gateway connection (discord.py reconnects and resumes by itself)."""
        pause = RETRY_FIRST
        while self._client is not None and not self._client.is_closed():
            client = self._client
            started = self.bridge.clock.monotonic()
            try:
                await client.connect(reconnect=True)
                return
            except discord.PrivilegedIntentsRequired:
                if not client.message_content:
                    raise
                log.error(MESSAGE_CONTENT_OFF)
                await client.close()
                self._client = await self._connect_again()
            except (discord.ConnectionClosed, discord.GatewayNotFound, discord.HTTPException) as exc:
                log.error("the Discord connection ended for good: %s", exc)
                return
            except Exception:  # an event discord.py could not read broke its receive loop
                log.exception("the Discord connection failed; connecting again in %.0fs", pause)
                if client.ws is not None:
                    await client.ws.close(code=4000)
                if self.bridge.clock.monotonic() - started > RETRY_MAX:
                    pause = RETRY_FIRST
                await self.bridge.clock.sleep(pause)
                pause = min(RETRY_MAX, pause * 2)

    async def _connect_again(self) -> ThreadlineClient | None:
        try:
            return await self._login(message_content=False)
        except (ConfigError, discord.HTTPException, OSError) as exc:
            log.error("could not log in to Discord again: %s", exc)
            return None
