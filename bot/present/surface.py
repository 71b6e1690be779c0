"""The Surface protocol: what an adapter offers for one thread, and its limits.

A Surface makes the platform call and nothing else; every decision (when to edit, where to
split, what to pin) is taken in :mod:`bot.present`. Failures are raised as
:class:`bot.errors.SurfaceError` subclasses: ``SurfaceRateLimited`` (with ``retry_after``),
``MessageTooLong``, ``EditRefused``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from bot.conversation import ThreadKey

Style = Literal["primary", "danger", "default"]


@dataclass(frozen=True, slots=True)
class Button:
    action_id: str
    """Opaque to the platform; comes back with the click (built by :mod:`bot.actions`)."""
    label: str
    style: Style = "default"


@dataclass(frozen=True, slots=True)
class SurfaceLimits:
    max_chars: int
    """Longest text one message may hold (after rendering)."""
    min_edit_interval: float
    """Seconds between two edits of the same message."""
    edits_per_minute: float | None
    """Edits allowed per minute across ``budget_key`` (shared by concurrent streams); None: no cap."""
    budget_key: str
    """What the budget is shared by: a Slack workspace, a Discord channel, the playground."""
    can_pin: bool = True


class Surface(Protocol):
    @property
    def thread_key(self) -> ThreadKey: ...

    @property
    def limits(self) -> SurfaceLimits: ...

    def render(self, markdown: str) -> str:
        """Convert the model's Markdown to the platform's format (and neutralise mass mentions)."""
        ...

    async def post(self, text: str, buttons: Sequence[Button] = ()) -> str:
        """Post a message in the thread; returns its id."""
        ...

    async def edit(self, message_id: str, text: str, buttons: Sequence[Button] = ()) -> None: ...

    async def drop_buttons(self, message_id: str) -> None:
        """Remove the buttons of a message the bot posted, leaving its text as it is (a Stop
        button left behind by a run a restart cut off)."""
        ...

    async def delete(self, message_id: str) -> None: ...

    async def pin(self, message_id: str) -> None: ...

    async def unpin(self, message_id: str) -> None: ...

    async def set_status(self, text: str | None) -> None:
        """Show (or clear, with None) a transient 'thinking' indicator."""
        ...
