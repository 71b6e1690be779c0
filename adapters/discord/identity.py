"""Who and where, in Threadline's terms: thread keys and authors from Discord objects."""

from __future__ import annotations

import discord

from bot.api.inbound import Author, ThreadKey


def thread_key(guild_id: int | None, channel_id: int) -> ThreadKey:
    """``discord:{guild}:{thread}`` in a server, ``discord:dm:{channel}`` in direct messages."""
    if guild_id is None:
        return ThreadKey(f"discord:dm:{channel_id}")
    return ThreadKey(f"discord:{guild_id}:{channel_id}")


def parse_key(key: str) -> tuple[int | None, int] | None:
    """``(guild id or None, channel id)`` of a key made by :func:`thread_key`; None if not one."""
    parts = key.split(":")
    if len(parts) != 3 or parts[0] != "discord" or not parts[2].isdigit():
        return None
    if parts[1] == "dm":
        return None, int(parts[2])
    return (int(parts[1]), int(parts[2])) if parts[1].isdigit() else None


def is_direct(key: str) -> bool:
    """Whether a key made by :func:`thread_key` names a direct message."""
    parsed = parse_key(key)
    return parsed is not None and parsed[0] is None


def author_of(user: discord.User | discord.Member) -> Author:
    """The speaker: ``discord:{id}``, the name the server shows, roles as ``discord:role:{id}``."""
    roles: frozenset[str] = frozenset()
    if isinstance(user, discord.Member):
        roles = frozenset(f"discord:role:{r.id}" for r in user.roles if not r.is_default())
    return Author(id=f"discord:{user.id}", display_name=user.display_name, roles=roles)
