"""The discord.py client: intents, the persistent buttons and the slash commands, events in.

Every gateway event parser, and every websocket's reading of a frame, is guarded
(:mod:`adapters.discord.guard`) as soon as the client's state exists, so an event or a frame
discord.py cannot read is skipped instead of ending the connection.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import discord
from discord import app_commands

from adapters.discord.commands import command_group, message_commands, sync_if_changed
from adapters.discord.config import Shards
from adapters.discord.guard import guard_frames, guard_parsers
from adapters.discord.listeners import Listeners
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
    def __init__(
        self,
        listeners: Listeners,
        data_dir: Path,
        *,
        message_content: bool,
        shards: Shards | None = None,
    ) -> None:
        # Threadline has no voice: discord.py's warnings about missing voice libraries are noise
        discord.VoiceClient.warn_nacl = False
        discord.VoiceClient.warn_dave = False
        sharding: dict[str, Any] = (
            {} if shards is None else {"shard_ids": list(shards.ids), "shard_count": shards.count}
        )
        super().__init__(
            intents=intents(message_content=message_content),
            allowed_mentions=NO_PINGS,
            http_trace=listeners.watch.trace_config(),
            max_messages=None,
            chunk_guilds_at_startup=False,
            member_cache_flags=discord.MemberCacheFlags.none(),
            **sharding,
        )
        self.listeners = listeners
        self.data_dir = data_dir
        self.message_content = message_content
        self.tree: app_commands.CommandTree[Any] = app_commands.CommandTree(self)
        guard_parsers(self._connection.parsers, listeners.skipped, listeners.catch_up.new_session)
        guard_frames(self._connection, listeners.skipped)

    @property
    def clicks(self) -> Listeners:
        """Where :class:`ActionButton` hands its clicks."""
        return self.listeners

    def dispatch(self, event: str, /, *args: Any, **kwargs: Any) -> None:
        """Events for a closed client are dropped: discord.py's wait for the guilds of a session
        may still end (and dispatch ``ready``) after the client was closed, when it has no loop."""
        if not self.is_closed():
            super().dispatch(event, *args, **kwargs)

    async def setup_hook(self) -> None:
        self.add_dynamic_items(ActionButton)
        self.tree.add_command(command_group(self.listeners))
        for command in message_commands(self.listeners):
            self.tree.add_command(command)
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
        self.listeners.on_ready()

    async def on_guild_available(self, guild: discord.Guild) -> None:
        self.listeners.on_guild_available(guild)

    async def on_resumed(self) -> None:
        log.info("Discord connection resumed")

    async def on_message(self, message: discord.Message) -> None:
        self.listeners.on_message(message)

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        self.listeners.on_edit(payload.message)


class ShardedThreadlineClient(ThreadlineClient, discord.AutoShardedClient):
    """The same client over the shards this process was given (one gateway connection each;
    Discord sends each shard the events of its servers, and direct messages to shard 0)."""


def make_client(
    listeners: Listeners, data_dir: Path, *, message_content: bool, shards: Shards | None
) -> ThreadlineClient:
    kind = ThreadlineClient if shards is None else ShardedThreadlineClient
    return kind(listeners, data_dir, message_content=message_content, shards=shards)
