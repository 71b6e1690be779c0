"""How the core reaches a thread without an incoming event (an approval that expires, a resumed
run), which channel a thread belongs to, and whether it is a direct message: each adapter
registers its key prefix and answers for its own keys (the core knows no platform's ids)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from bot.api.inbound import ThreadKey
from bot.api.surface import Surface
from bot.policy import keys

SurfaceFactory = Callable[[ThreadKey], Surface]
ChannelOf = Callable[[ThreadKey], str]
"""The channel a thread belongs to, as its adapter names it."""
DirectOf = Callable[[ThreadKey], bool]
"""Whether a thread is a direct message with the bot, as its adapter knows it."""


class Surfaces:
    def __init__(self) -> None:
        self._factories: dict[str, SurfaceFactory] = {}
        self._channels: dict[str, ChannelOf] = {}
        self._direct: dict[str, DirectOf] = {}

    def register(
        self,
        prefix: str,
        factory: SurfaceFactory,
        channel_of: ChannelOf | None = None,
        direct: DirectOf | None = None,
    ) -> None:
        self._factories[prefix] = factory
        if channel_of is not None:
            self._channels[prefix] = channel_of
        if direct is not None:
            self._direct[prefix] = direct

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


def _longest(prefixes: Mapping[str, object], key: str) -> str | None:
    return keys.most_specific(prefixes, key)
