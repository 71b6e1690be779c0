"""What an adapter hands the core: who said what, in which thread."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NewType

from bot.infra.text import valid_text

SCHEDULED_BY = "scheduled by "
"""How the model is told who a scheduled prompt is from: ``[scheduled by Alice]: …``."""

ThreadKey = NewType("ThreadKey", str)
"""Opaque to the engine: ``slack:{team}:{channel}:{thread_ts}``,
``discord:{guild}:{thread_id}``, ``playground:{thread_id}``."""


@dataclass(frozen=True, slots=True)
class Author:
    id: str
    """The platform's user id, prefixed by the platform (``slack:U123``)."""
    display_name: str
    roles: frozenset[str] = field(default_factory=frozenset)
    """Platform roles or user groups, for approval policy."""

    def __post_init__(self) -> None:
        _valid(self, "id", "display_name")
        object.__setattr__(self, "roles", frozenset(valid_text(r) for r in self.roles))

    @property
    def person(self) -> str:
        """The name to show people: ``Alice``, or ``Alice (scheduled)`` for an answer that a
        prompt Alice scheduled started (named ``scheduled by Alice`` for the model)."""
        name = self.display_name
        if not name.startswith(SCHEDULED_BY):
            return name
        while name.startswith(SCHEDULED_BY):
            name = name.removeprefix(SCHEDULED_BY)
        return f"{name or 'someone'} (scheduled)"


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file shared with a message, as the platform names it (the name is untrusted)."""

    name: str
    url: str
    size: int | None = None
    mimetype: str | None = None

    def __post_init__(self) -> None:
        _valid(self, "name", "url", "mimetype")


@dataclass(frozen=True, slots=True)
class Earlier:
    """A message of the thread from before the bot was first mentioned there."""

    author: str
    """Its author's display name."""
    text: str

    def __post_init__(self) -> None:
        _valid(self, "author", "text")


@dataclass(frozen=True, slots=True)
class Gap:
    """Where earlier messages of the thread were not read (the adapter's bound on their number)."""

    count: int | None
    """How many; None when the platform does not say (one or more)."""


@dataclass(frozen=True, slots=True)
class Inbound:
    """One message for the bot. Whether its thread is a direct message its adapter says when it
    registers its keys (:meth:`bot.core.Core.register_surfaces`)."""

    thread_key: ThreadKey
    author: Author
    text: str
    event_id: str
    """Unique per platform delivery; redeliveries carry the same id."""
    files: tuple[Attachment, ...] = ()
    history: tuple[Earlier | Gap, ...] = ()
    """The thread's earlier messages, oldest first, when this is the bot's first mention in a
    thread that existed before (shown to the model once, with this message); a :class:`Gap`
    stands where messages were not read."""
    addressed: bool = True
    """It mentions the bot, or is written in a direct message with it. False: a message in a
    thread that does not name the bot (the core answers it only in a thread that is the bot's,
    as the channel's ``thread_replies`` and the thread's quiet flag say)."""
    message_id: str | None = None
    """The platform's id of the message (a Slack ``ts``, a Discord message id)."""
    posted_at: float | None = None
    """For an edit: when the message ``message_id`` was first posted (seconds since the
    epoch, as the platform says); None for a new message."""

    @property
    def edit(self) -> bool:
        """A new text its author gave the message ``message_id`` (Slack's ``message_changed``,
        Discord's ``MESSAGE_UPDATE``), not a new message."""
        return self.posted_at is not None

    def __post_init__(self) -> None:
        _valid(self, "thread_key", "text", "event_id", "message_id")


def _valid(value: object, *names: str) -> None:
    """Text a platform delivered, made valid Unicode (:mod:`bot.infra.text`) as it comes in."""
    for name in names:
        text = getattr(value, name)
        if text is not None:
            object.__setattr__(value, name, valid_text(text))
