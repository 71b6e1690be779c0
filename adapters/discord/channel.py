"""A Discord thread's channel, read for ``read_channel``: the thread's parent channel (a
direct message: the conversation itself), its most recent messages through discord.py's
channel history (one request per 100 messages, paced like every other call), with their
authors' display names, mentions written as names and each message's link."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime

import discord

from adapters.discord.direct import Guarded
from bot.api.channel import ChannelMessage, OtherChannel
from bot.errors import SurfaceError

Call = Callable[
    [str, Callable[[], Awaitable[list[discord.Message]]]], Awaitable[list[discord.Message]]
]
"""The surface's guarded call (pacing, rate limits, errors as ``SurfaceError``)."""


class DiscordChannelHistory:
    def __init__(
        self, client: discord.Client, thread_id: int, guild_id: int | None, call: Call
    ) -> None:
        self._client = client
        self._thread_id = thread_id
        self._guild_id = guild_id
        self._call = call

    async def recent(self, since: float | None, limit: int) -> Sequence[ChannelMessage]:
        found = await self._call("read the channel", lambda: self._read(since, limit))
        return [_message(m) for m in reversed(found) if m.content.strip() or m.attachments]

    async def _read(self, since: float | None, limit: int) -> list[discord.Message]:
        channel = await self._channel()
        after = None if since is None else datetime.fromtimestamp(since, UTC)
        return [m async for m in channel.history(limit=limit, after=after, oldest_first=False)]

    async def _channel(self) -> discord.abc.Messageable:
        if self._guild_id is None:
            return self._client.get_partial_messageable(self._thread_id)
        thread = self._client.get_channel(self._thread_id)
        if thread is None:
            thread = await self._client.fetch_channel(self._thread_id)
        parent = getattr(thread, "parent_id", None)
        return self._client.get_partial_messageable(
            parent or self._thread_id, guild_id=self._guild_id, type=discord.ChannelType.text
        )


def _message(message: discord.Message) -> ChannelMessage:
    author = message.author.display_name + (" (an app)" if message.author.bot else "")
    files = " ".join(f"[file: {a.filename}]" for a in message.attachments)
    thread = message.thread
    return ChannelMessage(
        author=author,
        text=" ".join(t for t in (message.clean_content, files) if t),
        at=message.created_at.timestamp(),
        link=message.jump_url,
        replies=(thread.message_count or 0) if thread is not None else 0,
    )


class DiscordChannels:
    """Other text channels of the thread's server, for ``read_channel`` naming one
    (``bot.api.channel``): found by mention, id or name in the client's cache, read only when
    the bot and the person asking (looked up with ``GET /guilds/{id}/members/{user}``) may both
    view it and read its history."""

    def __init__(
        self, client: discord.Client, guild_id: int | None, call: Call, lookup: Guarded
    ) -> None:
        self._client = client
        self._guild_id = guild_id
        self._call = call
        self._lookup = lookup

    async def find(self, ref: str, asker: str) -> OtherChannel | str:
        guild = self._client.get_guild(self._guild_id) if self._guild_id is not None else None
        if guild is None:
            return "another channel can be read only from a thread in its server"
        user = asker.removeprefix("discord:")
        if not user.isdigit():
            return "only Discord people can have a Discord channel read"
        channel = _channel(guild, ref)
        if channel is None:
            return f"there is no text channel {ref} in this server that Threadline can see"
        name = f"#{channel.name}"
        if not _reads(channel.permissions_for(guild.me)):
            return f"Threadline cannot read {name}: give it View Channel and Read Message History there"
        try:
            member = guild.get_member(int(user))
            if member is None:
                member = await self._lookup(
                    "look a member up", lambda: guild.fetch_member(int(user))
                )
        except SurfaceError:
            return "the person asking is not a member of this server"
        if not _reads(channel.permissions_for(member)):
            return f"the person asking cannot see {name}"
        history = DiscordChannelHistory(self._client, channel.id, guild.id, self._call)
        return OtherChannel(f"discord:{guild.id}:{channel.id}", name, history)


def _channel(guild: discord.Guild, ref: str) -> discord.TextChannel | None:
    text = ref.strip()
    digits = text.removeprefix("<#").removesuffix(">")
    if digits.isdigit():
        found = guild.get_channel(int(digits))
        return found if isinstance(found, discord.TextChannel) else None
    name = text.removeprefix("#").lower()
    return next((c for c in guild.text_channels if c.name.lower() == name), None)


def _reads(permissions: discord.Permissions) -> bool:
    return permissions.view_channel and permissions.read_message_history
