"""The discord.py client: intents, the persistent buttons and the slash commands, events in."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import discord
from discord import app_commands

from adapters.discord.bridge import Bridge
from adapters.discord.commands import command_group, sync_if_changed
from adapters.discord.events import route_message
from adapters.discord.surface import NO_PINGS
from adapters.discord.views import ActionButton

log = logging.getLogger(__name__)


def intents(*, message_content: bool) -> discord.Intents:
    """Servers and their channels, messages in servers and DMs, and (if allowed) their content."""
    wanted = discord.Intents.none()
    wanted.guilds = True
    wanted.guild_messages = True
    wanted.dm_messages = True
    wanted.message_content = message_content
    return wanted


class ThreadlineClient(discord.Client):
    def __init__(self, bridge: Bridge, data_dir: Path, *, message_content: bool) -> None:
        # Threadline has no voice: discord.py's warnings about missing voice libraries are noise
        discord.VoiceClient.warn_nacl = False
        discord.VoiceClient.warn_dave = False
        super().__init__(
            intents=intents(message_content=message_content),
            allowed_mentions=NO_PINGS,
            http_trace=bridge.watch.trace_config(),
            max_messages=None,
            chunk_guilds_at_startup=False,
            member_cache_flags=discord.MemberCacheFlags.none(),
        )
        self.bridge = bridge
        self.data_dir = data_dir
        self.message_content = message_content
        self.tree: app_commands.CommandTree[Any] = app_commands.CommandTree(self)

    @property
    def clicks(self) -> Bridge:
        """Where :class:`ActionButton` hands its clicks."""
        return self.bridge

    async def setup_hook(self) -> None:
        self.add_dynamic_items(ActionButton)
        self.tree.add_command(command_group(self.bridge))
        if self.application_id is None:
            log.warning("Discord did not name the application; slash commands are not registered")
            return
        try:
            await sync_if_changed(self.tree, self.application_id, self.data_dir)
        except discord.HTTPException as exc:
            log.warning("could not register the slash commands: %s %s", exc.status, exc.text)

    async def on_ready(self) -> None:
        user = self.user
        log.info("connected to Discord as %s in %d server(s)", user, len(self.guilds))
        self.bridge.ready.set()

    async def on_resumed(self) -> None:
        log.info("Discord connection resumed")

    async def on_message(self, message: discord.Message) -> None:
        self.bridge.spawn(route_message(self.bridge, message))
