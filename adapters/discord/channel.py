"""A Discord thread's channel, read for ``read_channel``: the thread's parent channel (a
direct message: the conversation itself), its most recent messages through discord.py's
channel history (one request per 100 messages, paced like every other call), with their
authors' display names, mentions written as names and each message's link."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime

import discord

from bot.api.channel import ChannelMessage

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
