"""How the core reaches a thread without an incoming event (an approval that expires, a resumed
run), which channel a thread belongs to, and whether it is a direct message: each adapter
registers its key prefix and answers for its own keys (the core knows no platform's ids)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping

from bot.api.inbound import ThreadKey
from bot.api.people import people_of
from bot.api.surface import Surface
from bot.errors import SurfaceError
from bot.policy import keys

log = logging.getLogger(__name__)

SurfaceFactory = Callable[[ThreadKey], Surface]
ChannelOf = Callable[[ThreadKey], str]
"""The channel a thread belongs to, as its adapter names it."""
DirectOf = Callable[[ThreadKey], bool]
"""Whether a thread is a direct message with the bot, as its adapter knows it."""
NameOf = Callable[[ThreadKey], Awaitable[str | None]]
"""The name people see for a thread's channel (``ops``), as its adapter finds it (None: unknown)."""
NAME_WAIT_S = 2.0
"""How long a model call waits for a channel's name before going on without it."""


class Surfaces:
    def __init__(self) -> None:
        self._factories: dict[str, SurfaceFactory] = {}
        self._channels: dict[str, ChannelOf] = {}
        self._direct: dict[str, DirectOf] = {}
        self._names: dict[str, NameOf] = {}

    def register(
        self,
        prefix: str,
        factory: SurfaceFactory,
        channel_of: ChannelOf | None = None,
        direct: DirectOf | None = None,
        name_of: NameOf | None = None,
    ) -> None:
        self._factories[prefix] = factory
        if channel_of is not None:
            self._channels[prefix] = channel_of
        if direct is not None:
            self._direct[prefix] = direct
        if name_of is not None:
            self._names[prefix] = name_of

    def surface_for(self, key: ThreadKey) -> Surface | None:
        prefix = _longest(self._factories, key)
        return self._factories[prefix](key) if prefix is not None else None

    def channel_of(self, key: str) -> str:
        """The thread's channel as its adapter names it; the thread itself when unknown."""
        prefix = _longest(self._channels, key)
        return self._channels[prefix](ThreadKey(key)) if prefix is not None else key

    def direct(self, key: str) -> bool:
        """Whether the thread is a direct message with the bot (False when no adapter says so)."""
        prefix = _longest(self._direct, key)
        return prefix is not None and self._direct[prefix](ThreadKey(key))

    async def channel_name(self, key: str) -> str | None:
        """The name people see for the thread's channel (None when its adapter does not say)."""
        prefix = _longest(self._names, key)
        if prefix is None:
            return None
        lookup = asyncio.ensure_future(self._names[prefix](ThreadKey(key)))
        try:  # a slow platform costs the run at most this; the lookup goes on and is kept
            return await asyncio.wait_for(asyncio.shield(lookup), NAME_WAIT_S)
        except TimeoutError:
            return None

    async def names(self, key: str, ids: Collection[str]) -> Mapping[str, str]:
        """The names people see for these user and role ids, as the thread's adapter finds
        them within :data:`NAME_WAIT_S` (those it does not find are left out)."""
        try:
            surface = self.surface_for(ThreadKey(key)) if ids else None
            people = people_of(surface) if surface is not None else None
            if people is None:
                return {}
            return await asyncio.wait_for(people.names(sorted(ids)), NAME_WAIT_S)
        except (TimeoutError, SurfaceError) as exc:
            log.info("no names for the approvers in %s: %s", key, exc or type(exc).__name__)
            return {}


def _longest(prefixes: Mapping[str, object], key: str) -> str | None:
    return keys.most_specific(prefixes, key)
