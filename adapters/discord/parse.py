"""A Discord message → what it says to Threadline: whether a person wrote it, whether it
mentions the bot, the thread's name, and the :class:`~bot.api.inbound.Inbound` for the core.

The text loses the bot's mention; other mentions become ``@name``/``#channel``, never raw ids.
The event id is ``discord:{message id}``: the core answers each message once. An edit's is
``discord:{message id}:edited:{edited at}``: each edit once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import discord

from adapters.discord.identity import author_of, thread_key
from bot.api.inbound import Attachment, Inbound

ANSWERED = frozenset({discord.MessageType.default, discord.MessageType.reply})
THREAD_NAME_CHARS = 80
_USER = re.compile(r"<@!?(\d+)>")
_ROLE = re.compile(r"<@&(\d+)>")
_CHANNEL = re.compile(r"<#(\d+)>")
_EMOJI = re.compile(r"<a?:(\w+):\d+>")
_LEADING = re.compile(r"^[\s,:;]+")


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


def thread_name(message: discord.Message, me: discord.abc.User) -> str:
    first = clean_text(message, me).split("\n", 1)[0].strip()
    if len(first) > THREAD_NAME_CHARS:
        first = first[: THREAD_NAME_CHARS - 1].rstrip() + "…"
    return first or f"{message.author.display_name} and {me.display_name}"


def to_inbound(message: discord.Message, where: Where, me: discord.abc.User) -> Inbound:
    files = tuple(
        Attachment(a.filename, a.url, a.size, a.content_type) for a in message.attachments
    )
    return Inbound(
        thread_key=thread_key(where.guild_id, where.channel_id),
        author=author_of(message.author),
        text=clean_text(message, me),
        event_id=f"discord:{message.id}",
        files=files,
        addressed=where.guild_id is None or mentions_me(message, me),
        message_id=str(message.id),
    )


def edit_inbound(message: discord.Message, where: Where, me: discord.abc.User) -> Inbound | None:
    """A person's edit of ``message`` (its new text) for the core; None when Discord does not
    say it was edited (an embed unfurled)."""
    if message.edited_at is None:
        return None
    return replace(
        to_inbound(message, where, me),
        event_id=f"discord:{message.id}:edited:{message.edited_at.timestamp()}",
        files=(),
        addressed=False,
        posted_at=message.created_at.timestamp(),
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
