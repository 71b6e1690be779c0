"""What a surface offers to reach people outside the thread: its ``people`` attribute, when the
platform can send direct messages (approvals that need someone else's decision).

Kept beside the :class:`~bot.api.surface.Surface` protocol rather than in it, like
:mod:`bot.api.channel`: a surface without it simply tells nobody, and the card in the thread
still says who can decide. Ids are Threadline's (``slack:U123``, ``slack:group:S1``,
``discord:42``, ``discord:role:7``); an id of another platform is not this surface's to reach.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class People(Protocol):
    async def names(self, ids: Sequence[str]) -> Mapping[str, str]:
        """The names people see for these user and role ids: those it could find."""
        ...

    async def members(self, role: str, limit: int) -> Sequence[str]:
        """The ids of at most ``limit`` people holding ``role`` (a Discord role, a Slack user
        group); empty when it cannot say. Raises :class:`~bot.errors.SurfaceError` when the
        platform refuses."""
        ...

    async def link(self, message_id: str) -> str | None:
        """A link that opens a message of this thread (None: the platform gave none)."""
        ...

    async def send(self, person: str, markdown: str) -> None:
        """Send ``person`` a direct message from the bot. Raises
        :class:`~bot.errors.SurfaceError` when the platform refuses (the person does not take
        direct messages, a scope is missing)."""
        ...


def people_of(surface: object) -> People | None:
    """The surface's way to reach people, if it has one."""
    people = getattr(surface, "people", None)
    return people if isinstance(people, People) else None
