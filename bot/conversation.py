"""What an adapter hands the core: who said what, in which thread."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NewType

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


@dataclass(frozen=True, slots=True)
class Attachment:
    name: str
    url: str
    size: int | None = None


@dataclass(frozen=True, slots=True)
class Inbound:
    thread_key: ThreadKey
    author: Author
    text: str
    event_id: str
    """Unique per platform delivery; redeliveries carry the same id."""
    files: tuple[Attachment, ...] = ()
    dm: bool = False
    """A direct message with the bot (``[access] dms`` applies)."""
