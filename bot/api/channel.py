"""What a surface offers to read its channel: its ``channel_history`` attribute, when the
platform can read it (``read_channel``); and another channel, found by name, id or mention,
through its ``other_channels`` attribute (:class:`ChannelFinder`).

Kept beside the :class:`~bot.api.surface.Surface` protocol rather than in it, like
:mod:`bot.api.transfer`: a surface that cannot read its channel simply has none, and the tool
says so. The channel read is always the thread's own (a Slack thread's channel, a Discord
thread's parent channel, the playground's threads) unless the model names another one: that
one is read only when the bot is in it and the person asking is a member of it (can see it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class ChannelMessage:
    """One message of the channel, as people see it."""

    author: str
    """The author's display name (an app's name with "(an app)")."""
    text: str
    """Plain text, mentions written as names."""
    at: float
    """When it was posted (Unix seconds)."""
    link: str
    """A link to the message, or the platform's id for it when no link can be built."""
    replies: int = 0
    """Replies in the thread it starts (0: no thread)."""


@runtime_checkable
class ChannelReader(Protocol):
    async def recent(self, since: float | None, limit: int) -> Sequence[ChannelMessage]:
        """The channel's most recent messages posted after ``since`` (Unix seconds; None: any
        time), at most ``limit``, oldest first. Raises :class:`~bot.errors.SurfaceError` when
        the platform refuses."""
        ...


def channel_reader(surface: object) -> ChannelReader | None:
    """The surface's channel reader, if it has one."""
    reader = getattr(surface, "channel_history", None)
    return reader if isinstance(reader, ChannelReader) else None


@dataclass(frozen=True, slots=True)
class OtherChannel:
    """Another channel, found and checked: the person asking may see it, and so may the bot."""

    key: str
    """The channel as thread keys begin with it (``slack:T1:C2``, ``discord:42:7``): what the
    policy's channel lists are compared with."""
    name: str
    """What people call it (``#ops``)."""
    reader: ChannelReader


@runtime_checkable
class ChannelFinder(Protocol):
    async def find(self, ref: str, asker: str) -> OtherChannel | str:
        """The channel ``ref`` names (``#ops``, ``ops``, an id or a mention), for the person
        ``asker`` (an id such as ``slack:U1``): found and checked, or why not, in words (no such
        channel, the bot is not in it, ``asker`` is not a member). Raises
        :class:`~bot.errors.SurfaceError` when the platform refuses."""
        ...


def channel_finder(surface: object) -> ChannelFinder | None:
    """The surface's finder of other channels, if it has one."""
    finder = getattr(surface, "other_channels", None)
    return finder if isinstance(finder, ChannelFinder) else None
