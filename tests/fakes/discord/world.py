"""The fake Discord's state: users, guilds, channels and threads, messages, pins, interactions.

Operations enforce what Discord enforces (content length, edits of old messages and of
messages in archived threads, the pin limit, one thread per message) and raise
:class:`ApiError` with Discord's codes; every change is published to the gateway through
``listeners`` and wakes :meth:`World.wait_for`.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Callable
from typing import Any

from bot.infra.clock import Clock
from tests.fakes.discord.model import (
    DM,
    PUBLIC_THREAD,
    TEXT,
    ApiError,
    Channel,
    Guild,
    Interaction,
    Member,
    Message,
    Role,
    User,
    unknown,
)

DISCORD_EPOCH_MS = 1_420_070_400_000
MAX_CONTENT = 2000
OLD_MESSAGE_S = 3600.0
"""Edits of messages older than this are refused (30046) while ``refuse_old_edits`` is on."""
_USER_MENTION = re.compile(r"<@!?(\d+)>")
_ROLE_MENTION = re.compile(r"<@&(\d+)>")

Listener = Callable[[str, dict[str, Any]], None]


class World:
    def __init__(self, clock: Clock, *, bot_name: str = "Threadline", app_flags: int = 1 << 18):
        self.clock = clock
        self._seq = itertools.count(1)
        self.bot = User(self.snowflake(), bot_name, None, bot=True)
        self.app_id = self.bot.id
        self.app_flags = app_flags
        self.interactions_endpoint_url: str | None = None
        self.guilds: dict[int, Guild] = {}
        self.channels: dict[int, Channel] = {}
        self.messages: dict[int, Message] = {}
        self.interactions: dict[str, Interaction] = {}
        self.commands: list[dict[str, Any]] = []
        self.command_syncs = 0
        self.refuse_old_edits = True
        self.listeners: list[Listener] = []
        self._changed = asyncio.Event()

    # --- ids, events, waiting -----------------------------------------------------------------
    def snowflake(self) -> int:
        ms = int(self.clock.now() * 1000) - DISCORD_EPOCH_MS
        return (ms << 22) | (next(self._seq) & 0x3FFFFF)

    def emit(self, event: str, data: dict[str, Any]) -> None:
        for listener in list(self.listeners):
            listener(event, data)
        self.changed()

    def changed(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_for(self, predicate: Callable[[], object], within: float = 5.0) -> None:
        """Return once ``predicate()`` is true; it is checked after every change."""
        async with asyncio.timeout(within):
            while not predicate():
                await self._changed.wait()

    # --- setting up the world -----------------------------------------------------------------
    def add_guild(self, name: str = "Guild", *, shard: tuple[int, int] | None = None) -> Guild:
        """A server; with ``shard=(id, count)``, one whose id falls on that shard (its creation
        time moved back by up to ``count - 1`` ms)."""
        guild_id = self.snowflake()
        if shard is not None:
            shard_id, count = shard
            ms = guild_id >> 22
            guild_id = ((ms - (ms - shard_id) % count) << 22) | (guild_id & 0x3FFFFF)
        guild = Guild(guild_id, name, owner_id=0)
        guild.roles[guild.id] = Role(guild.id, "@everyone")
        guild.members[self.bot.id] = Member(self.bot)
        self.guilds[guild.id] = guild
        return guild

    def add_role(self, guild: Guild, name: str) -> Role:
        role = Role(self.snowflake(), name)
        guild.roles[role.id] = role
        return role

    def add_user(
        self,
        name: str,
        *,
        guild: Guild | None = None,
        nick: str | None = None,
        bot: bool = False,
        roles: tuple[Role, ...] = (),
    ) -> User:
        user = User(self.snowflake(), name.lower(), name, bot=bot)
        if guild is not None:
            guild.members[user.id] = Member(user, nick, [r.id for r in roles])
        return user

    def add_channel(self, guild: Guild, name: str = "general") -> Channel:
        channel = Channel(self.snowflake(), TEXT, name, guild.id, created_at=self.clock.now())
        self.channels[channel.id] = channel
        return channel

    def add_thread(self, parent: Channel, name: str, owner: User) -> Channel:
        """A thread someone opened without a starter message."""
        thread = self._thread(self.snowflake(), parent, name, owner)
        self.emit("THREAD_CREATE", {"thread": thread.id, "newly_created": True})
        return thread

    def open_dm(self, user: User) -> Channel:
        channel = Channel(self.snowflake(), DM, "", recipient=user, created_at=self.clock.now())
        self.channels[channel.id] = channel
        return channel

    def user(self, user_id: int) -> User:
        """Anyone the fake knows: the bot, a member of a server, someone in a direct message."""
        if user_id == self.bot.id:
            return self.bot
        for guild in self.guilds.values():
            if user_id in guild.members:
                return guild.members[user_id].user
        for channel in self.channels.values():
            if channel.recipient is not None and channel.recipient.id == user_id:
                return channel.recipient
        raise unknown("User", 10013)

    def dm_with(self, user: User) -> Channel:
        """The direct message channel between the bot and ``user`` (opened on first use)."""
        found = next(
            (c for c in self.channels.values() if c.type == DM and c.recipient == user), None
        )
        return found or self.open_dm(user)

    def direct_messages(self, user: User) -> list[str]:
        """What the bot sent ``user`` in their direct message, oldest first."""
        found = next(
            (c for c in self.channels.values() if c.type == DM and c.recipient == user), None
        )
        return [] if found is None else self.shown(found.id, by=self.bot)

    def _thread(self, thread_id: int, parent: Channel, name: str, owner: User) -> Channel:
        thread = Channel(
            thread_id,
            PUBLIC_THREAD,
            name[:100],
            parent.guild_id,
            parent.id,
            owner.id,
            created_at=self.clock.now(),
            members={owner.id},
        )
        self.channels[thread.id] = thread
        return thread

    # --- platform operations ------------------------------------------------------------------
    def channel(self, channel_id: int) -> Channel:
        try:
            return self.channels[channel_id]
        except KeyError:
            raise unknown("Channel", 10003) from None

    def guild(self, guild_id: int) -> Guild:
        try:
            return self.guilds[guild_id]
        except KeyError:
            raise unknown("Guild", 10004) from None

    def history(
        self,
        channel_id: int,
        *,
        limit: int = 50,
        before: int | None = None,
        after: int | None = None,
    ) -> list[Message]:
        """Up to ``limit`` messages, newest first: the newest before ``before``, or the oldest
        after ``after`` (as Discord's ``GET /channels/{id}/messages`` answers)."""
        self.channel(channel_id)
        if before is not None and after is not None:
            raise ApiError(400, 50035, "Invalid Form Body")
        if not 1 <= limit <= 100:
            raise ApiError(
                400,
                50035,
                "Invalid Form Body",
                {
                    "limit": {
                        "_errors": [
                            {
                                "code": "NUMBER_TYPE_MAX",
                                "message": "int value should be between 1 and 100.",
                            }
                        ]
                    }
                },
            )
        found = self.in_channel(channel_id)
        if after is not None:
            return list(reversed([m for m in found if m.id > after][:limit]))
        found = [m for m in found if before is None or m.id < before]
        return list(reversed(found[-limit:]))

    def active_threads(self, guild_id: int) -> list[Channel]:
        """The guild's threads that are not archived."""
        self.guild(guild_id)
        return [
            c
            for c in self.channels.values()
            if c.guild_id == guild_id and c.parent_id is not None and not c.archived
        ]

    def message(self, channel_id: int, message_id: int) -> Message:
        message = self.messages.get(message_id)
        if message is None or message.deleted or message.channel_id != channel_id:
            raise unknown("Message", 10008)
        return message

    def create_message(
        self,
        channel_id: int,
        author: User,
        content: str,
        *,
        components: list[dict[str, Any]] | None = None,
        flags: int = 0,
        allowed_mentions: dict[str, Any] | None = None,
        webhook_id: int | None = None,
        attachments: list[dict[str, Any]] | None = None,
    ) -> Message:
        channel = self.channel(channel_id)
        _check_content(content, components or attachments)
        if channel.archived:
            if channel.locked:
                raise ApiError(400, 50083, "Thread is archived")
            self.set_archived(channel.id, False)
        message = Message(
            self.snowflake(),
            channel.id,
            channel.guild_id,
            author,
            content,
            self.clock.now(),
            components or [],
            flags,
            webhook_id,
            history=[content],
            allowed_mentions=allowed_mentions,
            attachments=attachments or [],
        )
        self.messages[message.id] = message
        channel.last_message_id = message.id
        if channel.parent_id is not None:
            channel.members.add(author.id)  # posting in a thread joins it
        self.emit("MESSAGE_CREATE", {"message": message.id})
        return message

    def edit_message(
        self,
        channel_id: int,
        message_id: int,
        editor: User,
        *,
        content: str | None = None,
        components: list[dict[str, Any]] | None = None,
        allowed_mentions: dict[str, Any] | None = None,
    ) -> Message:
        channel = self.channel(channel_id)
        message = self.message(channel_id, message_id)
        if message.author.id != editor.id:
            raise ApiError(403, 50005, "Cannot edit a message authored by another user")
        if channel.archived:
            raise ApiError(400, 50083, "Thread is archived")
        if self.refuse_old_edits and self.clock.now() - message.created_at > OLD_MESSAGE_S:
            raise ApiError(
                400,
                30046,
                "Maximum number of edits to messages older than 1 hour reached. Try again later",
            )
        if content is not None:
            _check_content(content, components)
            message.content = content
        if components is not None:
            message.components = components
        message.allowed_mentions = allowed_mentions
        message.edited_at = self.clock.now()
        message.history.append(message.content)
        self.emit("MESSAGE_UPDATE", {"message": message.id})
        return message

    def delete_message(self, channel_id: int, message_id: int) -> None:
        message = self.message(channel_id, message_id)
        message.deleted = True
        channel = self.channel(channel_id)
        channel.pins = [p for p in channel.pins if p[0] != message_id]
        self.emit("MESSAGE_DELETE", {"id": str(message_id), "channel_id": str(channel_id)})

    def start_thread(self, channel_id: int, message_id: int, name: str) -> Channel:
        parent = self.channel(channel_id)
        message = self.message(channel_id, message_id)
        if parent.type != TEXT:
            raise ApiError(400, 50024, "Cannot execute action on this channel type")
        if message.thread_id is not None:
            raise ApiError(400, 160004, "A thread has already been created for this message")
        thread = self._thread(message.id, parent, name, self.bot)
        message.thread_id = thread.id
        self.emit("THREAD_CREATE", {"thread": thread.id, "newly_created": True})
        return thread

    def set_archived(
        self, thread_id: int, archived: bool, *, locked: bool | None = None
    ) -> Channel:
        thread = self.channel(thread_id)
        if thread.type != PUBLIC_THREAD:
            raise ApiError(400, 50024, "Cannot execute action on this channel type")
        thread.archived = archived
        if locked is not None:
            thread.locked = locked
        self.emit("THREAD_UPDATE", {"thread": thread.id})
        return thread

    def pin(self, channel_id: int, message_id: int) -> None:
        channel = self.channel(channel_id)
        self.message(channel_id, message_id)
        if channel.archived:
            raise ApiError(400, 50083, "Thread is archived")
        if any(p[0] == message_id for p in channel.pins):
            return
        if len(channel.pins) >= channel.pin_limit:
            raise ApiError(400, 30003, f"Maximum number of pins reached ({channel.pin_limit})")
        channel.pins.append((message_id, self.clock.now()))
        self.emit("CHANNEL_PINS_UPDATE", {"channel_id": str(channel_id)})

    def unpin(self, channel_id: int, message_id: int) -> None:
        channel = self.channel(channel_id)
        self.message(channel_id, message_id)
        if channel.archived:
            raise ApiError(400, 50083, "Thread is archived")
        channel.pins = [p for p in channel.pins if p[0] != message_id]
        self.emit("CHANNEL_PINS_UPDATE", {"channel_id": str(channel_id)})

    # --- what a test reads ----------------------------------------------------------------------
    def shown(self, channel_id: int, *, by: User | None = None) -> list[str]:
        """The contents the channel shows now, oldest first (the bot's messages by default)."""
        author = by or self.bot
        return [m.content for m in self.in_channel(channel_id) if m.author.id == author.id]

    def in_channel(self, channel_id: int) -> list[Message]:
        return sorted(
            (m for m in self.messages.values() if m.channel_id == channel_id and not m.deleted),
            key=lambda m: m.id,
        )

    def pinned(self, channel_id: int) -> list[Message]:
        channel = self.channel(channel_id)
        return [self.messages[mid] for mid, _ in channel.pins]

    def mentioned_users(self, content: str) -> list[User]:
        ids = {int(i) for i in _USER_MENTION.findall(content)}
        users = {
            u.id: u for g in self.guilds.values() for u in (m.user for m in g.members.values())
        }
        users.update({c.recipient.id: c.recipient for c in self.channels.values() if c.recipient})
        return [users[i] for i in sorted(ids) if i in users]

    @staticmethod
    def mentioned_roles(content: str) -> list[int]:
        return [int(i) for i in _ROLE_MENTION.findall(content)]


def _check_content(content: str, components: list[dict[str, Any]] | None | object) -> None:
    if len(content) > MAX_CONTENT:
        raise ApiError(
            400,
            50035,
            "Invalid Form Body",
            {
                "content": {
                    "_errors": [
                        {
                            "code": "BASE_TYPE_MAX_LENGTH",
                            "message": f"Must be {MAX_CONTENT} or fewer in length.",
                        }
                    ]
                }
            },
        )
    if not content and not components:
        raise ApiError(400, 50006, "Cannot send an empty message")
