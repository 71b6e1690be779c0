"""A Discord message in; the thread to answer in and an ``Inbound`` for the core out (or nothing).

- Messages from bots (this one included) and webhooks, and system messages, are ignored.
- Direct messages are always answered (``discord:dm:{channel}``).
- In a thread: a message that mentions the bot is answered; so is any readable message in a
  thread the bot has joined (``core.has_session``).
- In a text channel: a mention opens a thread from the message and is answered there. A
  redelivered mention finds that thread (its id is the message's) instead of a second one.

The text loses the bot's mention; other mentions become ``@name``/``#channel``, never raw ids.
The event id is ``discord:{message id}``: the core answers each message once.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import discord

from adapters.discord.identity import author_of, thread_key
from adapters.discord.surface import NO_PINGS
from bot.conversation import Attachment, Inbound

if TYPE_CHECKING:
    from adapters.discord.bridge import Bridge

log = logging.getLogger(__name__)

ANSWERED = frozenset({discord.MessageType.default, discord.MessageType.reply})
THREAD_NAME_CHARS = 80
THREAD_EXISTS = 160004
_USER = re.compile(r"<@!?(\d+)>")
_ROLE = re.compile(r"<@&(\d+)>")
_CHANNEL = re.compile(r"<#(\d+)>")
_EMOJI = re.compile(r"<a?:(\w+):\d+>")
_LEADING = re.compile(r"^[\s,:;]+")
NO_THREAD = "I can't open a thread here: I need the Create Public Threads and Send Messages in Threads permissions."


@dataclass(frozen=True, slots=True)
class Where:
    channel_id: int
    """The thread (or DM channel) the answer goes to."""
    guild_id: int | None


def from_a_person(message: discord.Message) -> bool:
    return not message.author.bot and message.webhook_id is None and message.type in ANSWERED


def mentions_me(message: discord.Message, me: discord.abc.User) -> bool:
    if any(u.id == me.id for u in message.mentions):
        return True
    role = message.guild.self_role if message.guild is not None else None
    return role is not None and role.id in message.raw_role_mentions


async def route_message(bridge: Bridge, message: discord.Message) -> None:
    """Hand ``message`` to the core when it is for the bot (in arrival order per channel)."""
    me = bridge.me
    if me is None or not from_a_person(message):
        return
    async with bridge.ordered(message.channel.id):
        where = await _where(bridge, message, me)
        if where is None:
            return
        bridge.answer(to_inbound(message, where, me), where.channel_id, where.guild_id)


async def _where(bridge: Bridge, message: discord.Message, me: discord.abc.User) -> Where | None:
    guild = message.guild
    if guild is None:
        return Where(message.channel.id, None)
    mentioned = mentions_me(message, me)
    channel = await _resolve(bridge, message.channel)
    if isinstance(channel, discord.Thread):
        if mentioned:
            return Where(channel.id, guild.id)
        readable = bool(message.content.strip() or message.attachments)
        if readable and await bridge.core.has_session(thread_key(guild.id, channel.id)):
            return Where(channel.id, guild.id)
        return None
    if isinstance(channel, discord.TextChannel) and mentioned:
        thread_id = await open_thread(bridge, message, thread_name(message, me))
        return None if thread_id is None else Where(thread_id, guild.id)
    return None


async def _resolve(bridge: Bridge, channel: object) -> object:
    """The channel, fetched when discord.py has not cached it (a thread it never saw)."""
    if not isinstance(channel, discord.PartialMessageable):
        return channel
    try:
        return await bridge.fetch_channel(channel.id)
    except discord.HTTPException as exc:
        log.warning("could not look up channel %s: %s %s", channel.id, exc.status, exc.text)
        return None


async def open_thread(bridge: Bridge, message: discord.Message, name: str) -> int | None:
    """The thread started from ``message``: created now, or the one already there."""
    guild = message.guild
    if guild is not None and guild.get_thread(message.id) is not None:
        return message.id
    try:
        await bridge.pacer.acquire()
        thread = await message.create_thread(name=name, auto_archive_duration=1440)
    except discord.HTTPException as exc:
        if exc.code == THREAD_EXISTS:
            return message.id  # a thread started from a message has the message's id
        log.warning("could not open a thread from message %s: %s %s", message.id, exc.status, exc.text)
        if exc.status == 403:
            await _say_no_thread(message)
        return None
    return thread.id


async def _say_no_thread(message: discord.Message) -> None:
    try:
        await message.channel.send(NO_THREAD, allowed_mentions=NO_PINGS)
    except discord.HTTPException:
        log.warning("could not tell channel %s that threads are not allowed", message.channel.id)


def thread_name(message: discord.Message, me: discord.abc.User) -> str:
    first = clean_text(message, me).split("\n", 1)[0].strip()
    if len(first) > THREAD_NAME_CHARS:
        first = first[: THREAD_NAME_CHARS - 1].rstrip() + "…"
    return first or f"{message.author.display_name} and {me.display_name}"


def to_inbound(message: discord.Message, where: Where, me: discord.abc.User) -> Inbound:
    files = tuple(Attachment(a.filename, a.url, a.size) for a in message.attachments)
    return Inbound(
        thread_key=thread_key(where.guild_id, where.channel_id),
        author=author_of(message.author),
        text=clean_text(message, me),
        event_id=f"discord:{message.id}",
        files=files,
    )


def clean_text(message: discord.Message, me: discord.abc.User) -> str:
    """The message as a person reads it: no bot mention, names instead of ids."""
    guild = message.guild
    names = {u.id: u.display_name for u in message.mentions}
    self_role = guild.self_role if guild is not None else None

    def user(match: re.Match[str]) -> str:
        uid = int(match.group(1))
        return "" if uid == me.id else f"@{names.get(uid, 'unknown-user')}"

    def role(match: re.Match[str]) -> str:
        rid = int(match.group(1))
        if self_role is not None and rid == self_role.id:
            return ""
        found = guild.get_role(rid) if guild is not None else None
        return f"@{found.name}" if found is not None else "@unknown-role"

    def channel(match: re.Match[str]) -> str:
        found = guild.get_channel_or_thread(int(match.group(1))) if guild is not None else None
        return f"#{found.name}" if found is not None else "#unknown-channel"

    text = _USER.sub(user, message.content)
    text = _ROLE.sub(role, text)
    text = _CHANNEL.sub(channel, text)
    text = _EMOJI.sub(r":\1:", text)
    return _LEADING.sub("", text).strip()
