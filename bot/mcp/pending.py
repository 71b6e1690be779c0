"""A form (or a link) waiting in a thread for its person: what its card shows and what became
of it. Plain values; :mod:`bot.mcp.forms` keeps them while their call waits."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum

from bot.mcp.asking import FormAsked


class FormStatus(StrEnum):
    WAITING = "waiting"
    SENT = "sent"
    DECLINED = "declined"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    STOPPED = "stopped"
    """The call asking for it ended first (a Stop, a time limit, the server gone)."""


@dataclass(slots=True)
class PendingForm:
    id: str
    """Random and unguessable: it travels in the buttons."""
    key: str
    """The thread."""
    person_id: str
    """The one person who may answer: the run's."""
    person_name: str
    asked: FormAsked
    expires_at: float
    status: FormStatus = FormStatus.WAITING
    card_id: str | None = None
    on_card: Callable[[str], Awaitable[None]] | None = field(default=None, repr=False)
    """Called with the card's id as soon as it is posted (the store notes it, so that a click
    on another worker finds the card to update)."""
    on_closed: Callable[[], Awaitable[None]] | None = field(default=None, repr=False)
    """Called once it no longer waits (the run forgets its card: a restart has nothing to
    mend)."""

    @property
    def waiting(self) -> bool:
        return self.status is FormStatus.WAITING

    @property
    def link(self) -> bool:
        return self.asked.form is None
