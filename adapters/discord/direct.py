"""Reaching Discord people outside a thread (``bot.api.people``), for approvals that need
someone else's decision: their names (the server's member, else the user), roles' names, the
members of a role as far as the client's cache knows them (the bot asks for no Server Members
intent, so a role's members are known only once they have been seen), a jump link to the card,
and a direct message (``POST /users/@me/channels``, then the message, pinging nobody). Ids of
another platform are not ours: they get no name and no message."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol, TypeVar

import discord

from adapters.discord.render import render
from bot.errors import SurfaceError

T = TypeVar("T")
USER, ROLE = "discord:", "discord:role:"
NO_PINGS = discord.AllowedMentions(everyone=False, users=False, roles=False, replied_user=False)


class Guarded(Protocol):
    """The surface's guarded call (pacing, rate limits, Discord's errors as ``SurfaceError``)."""

    def __call__(self, what: str, make: Callable[[], Awaitable[T]]) -> Awaitable[T]: ...


class DiscordPeople:
    def __init__(
        self, client: discord.Client, guild_id: int | None, channel_id: int, call: Guarded
    ) -> None:
        self._client = client
        self._guild_id = guild_id
        self._channel_id = channel_id
        self._call = call

    async def names(self, ids: Sequence[str]) -> Mapping[str, str]:
        guild = self._client.get_guild(self._guild_id) if self._guild_id else None
        found: dict[str, str] = {}
        for person in ids:
            if person.startswith(ROLE):
                role = guild.get_role(_int(person, ROLE)) if guild is not None else None
                if role is not None:
                    found[person] = f"@{role.name}"
            elif person.startswith(USER) and person.removeprefix(USER).isdigit():
                name = await self._name(guild, _int(person, USER))
                if name:
                    found[person] = name
        return found

    async def _name(self, guild: discord.Guild | None, user_id: int) -> str | None:
        try:
            if guild is not None:
                return (await self._member(guild, user_id)).display_name
            return (await self._user(user_id)).display_name
        except SurfaceError:
            return None

    async def _member(self, guild: discord.Guild, user_id: int) -> discord.Member:
        cached = guild.get_member(user_id)
        if cached is not None:
            return cached
        fetched: discord.Member = await self._call(
            "look a member up", lambda: guild.fetch_member(user_id)
        )
        return fetched

    async def _user(self, user_id: int) -> discord.User:
        cached = self._client.get_user(user_id)
        if cached is not None:
            return cached
        fetched: discord.User = await self._call(
            "look a user up", lambda: self._client.fetch_user(user_id)
        )
        return fetched

    async def members(self, role: str, limit: int) -> Sequence[str]:
        guild = self._client.get_guild(self._guild_id) if self._guild_id else None
        found = (
            guild.get_role(_int(role, ROLE))
            if guild is not None and role.startswith(ROLE)
            else None
        )
        if found is None:
            return []
        return [f"{USER}{m.id}" for m in found.members if not m.bot][:limit]

    async def link(self, message_id: str) -> str | None:
        where = self._guild_id if self._guild_id is not None else "@me"
        return f"https://discord.com/channels/{where}/{self._channel_id}/{message_id}"

    async def send(self, person: str, markdown: str) -> None:
        if person.startswith(ROLE) or not person.removeprefix(USER).isdigit():
            raise SurfaceError(f"{person} is not a Discord user")
        user = await self._user(_int(person, USER))
        channel = await self._call("open a direct message", user.create_dm)
        text = render(markdown)
        await self._call(
            "send a direct message",
            lambda: channel.send(content=text, allowed_mentions=NO_PINGS),
        )


def _int(person: str, prefix: str) -> int:
    digits = person.removeprefix(prefix)
    return int(digits) if digits.isdigit() else 0
