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

from adapters.discord.client import ThreadlineClient, make_client
from adapters.discord.config import DiscordSettings
from adapters.discord.endpoints import point_at
from adapters.discord.identity import is_direct, parse_key
from adapters.discord.listeners import Listeners
from bot.api.inbound import ThreadKey
from bot.api.port import CoreApi
from bot.config import Settings
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


class DiscordAdapter:
    name = "discord"

    def __init__(
        self,
        core: CoreApi,
        settings: Settings,
        discord_settings: DiscordSettings,
        *,
        stop_grace: float = STOP_GRACE,
    ) -> None:
        self._token = discord_settings.token()
        self._shards = discord_settings.shards()
        self._settings = settings
        self._discord = discord_settings
        self._stop_grace = stop_grace
        self.listeners = Listeners(core, core.clock, settings.thread_history_messages)
        self._client: ThreadlineClient | None = None
        self._runner: asyncio.Task[None] | None = None

    def install(self, app: web.Application) -> None:
        """Discord needs no HTTP route: everything arrives over the gateway."""

    @property
    def client(self) -> ThreadlineClient | None:
        return self._client

    async def problem(self) -> str | None:
        client = self._client
        if client is None or client.is_closed():
            return "not connected"
        if not client.is_ready():
            return "connecting to the gateway"
        return None

    async def start(self) -> None:
        point_at(self._discord.discord_api_base, self._discord.discord_gateway_url)
        self._client = await self._login(message_content=True)
        self.listeners.core.register_surfaces(
            KEY_PREFIX, self.listeners.surface_for_key, direct=is_direct, name_of=self._channel_name
        )
        self._runner = asyncio.get_running_loop().create_task(self._run())
        if self._shards is not None:
            log.info("Discord: connecting %s", self._shards.describe())

    async def _channel_name(self, key: ThreadKey) -> str | None:
        """The name of the channel a thread is in, from discord.py's cache (no request)."""
        parsed = parse_key(key)
        if parsed is None or parsed[0] is None or self._client is None:
            return None
        channel = self._client.get_channel(parsed[1])
        parent = getattr(channel, "parent", None)
        name = getattr(parent, "name", None) or getattr(channel, "name", None)
        return name if isinstance(name, str) and name else None

    async def stop(self) -> None:
        await self.listeners.tasks.drain(self._stop_grace)
        if self._client is not None:
            await self._client.close()
        if self._runner is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner
        await _finish_dispatched_events()

    async def _login(self, *, message_content: bool) -> ThreadlineClient:
        client = make_client(
            self.listeners,
            self._settings.data_dir,
            message_content=message_content,
            shards=self._shards,
        )
        try:
            await client.login(self._token)
        except discord.LoginFailure:
            await client.close()
            raise ConfigError("DISCORD_TOKEN", BAD_TOKEN) from None
        except BaseException:
            await client.close()
            raise
        self.listeners.client = client
        return client

    async def _run(self) -> None:
        """Keep the gateway connection (discord.py reconnects and resumes by itself)."""
        pause = RETRY_FIRST
        while self._client is not None and not self._client.is_closed():
            client = self._client
            started = self.listeners.clock.monotonic()
            try:
                await client.connect(reconnect=True)
                return
            except discord.PrivilegedIntentsRequired:
                if not client.message_content:
                    raise
                log.error(MESSAGE_CONTENT_OFF)
                await client.close()
                self._client = await self._connect_again()
            except (
                discord.ConnectionClosed,
                discord.GatewayNotFound,
                discord.HTTPException,
            ) as exc:
                log.error("the Discord connection ended for good: %s", exc)
                return
            except Exception:  # an event discord.py could not read broke its receive loop
                log.exception("the Discord connection failed; connecting again in %.0fs", pause)
                if client.ws is not None:
                    await client.ws.close(code=4000)
                if self.listeners.clock.monotonic() - started > RETRY_MAX:
                    pause = RETRY_FIRST
                await self.listeners.clock.sleep(pause)
                pause = min(RETRY_MAX, pause * 2)

    async def _connect_again(self) -> ThreadlineClient | None:
        try:
            return await self._login(message_content=False)
        except (ConfigError, discord.HTTPException, OSError) as exc:
            log.error("could not log in to Discord again: %s", exc)
            return None


async def _finish_dispatched_events() -> None:
    """After the close: discord.py's wait for the ``ready`` event (it would dispatch on a closed
    client) is cancelled, and the event handlers it scheduled run out (they only hand work to
    listeners that no longer take any), so nothing is left behind when the loop ends."""
    for task in asyncio.all_tasks():
        coro = task.get_coro()
        if getattr(coro, "__qualname__", "") == "ConnectionState._delay_ready":
            task.cancel()
    pending = [
        t
        for t in asyncio.all_tasks()
        if t.get_name().startswith("discord.py: ") and t is not asyncio.current_task()
    ]
    if pending:
        await asyncio.wait(pending, timeout=STOP_GRACE)
