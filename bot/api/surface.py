"""The Surface protocol: what an adapter offers for one thread, and its limits.

A Surface makes the platform call and nothing else; every decision (when to edit, where to
split, what to pin) is taken in :mod:`bot.present`. Failures are raised as
:class:`bot.errors.SurfaceError` subclasses: ``SurfaceRateLimited`` (with ``retry_after``),
``MessageTooLong``, ``EditRefused``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from bot.api.inbound import ThreadKey

Style = Literal["primary", "danger", "default"]


@dataclass(frozen=True, slots=True)
class Button:
    action_id: str
    """Opaque to the platform; comes back with the click (built by :mod:`bot.api.actions`)."""
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
    final_reserve: int = 0
    """Edits of the budget that interim edits leave alone, so that a final edit goes at once."""
    fresh_final_after: float | None = None
    """When a final edit would wait longer than this for the budget, the final text is posted
    as a new message and the draft deleted afterwards (for platforms where posting does not
    draw on the edit budget); None: always edit."""
    deletes_per_minute: float | None = None
    """Deletions allowed per minute across ``budget_key`` (the drafts a fresh final leaves)."""
    delete_burst: int = 1
    """Deletions allowed at once before ``deletes_per_minute`` paces them."""
    posts_per_minute: float | None = None
    """New messages allowed per minute across ``post_key``; None: posts are not paced."""
    post_window: int = 1
    """At most this many posts in any ``post_window`` × 60 / ``posts_per_minute`` seconds (a
    sliding window, as Slack counts a channel's posts): that many at once after a quiet spell."""
    post_key: str | None = None
    """What the post budget is shared by (a Slack channel); None: posts are not paced."""
    workers_share_budget: bool = True
    """Whether several workers may edit behind ``budget_key`` at once (a workspace's threads
    are answered by any worker), so that on a shared store they pace together; False where only
    the worker holding one thread edits there (a Discord thread is its own channel)."""


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

    async def edit(
        self, message_id: str, text: str, buttons: Sequence[Button] = (), *, final: bool = False
    ) -> None:
        """``final``: the last edit of a reply or an approval card, which goes before interim
        edits where the platform's pacing has a choice (Discord's global limit)."""
        ...

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


@runtime_checkable
class PrivateNotes(Protocol):
    """A surface that can show one person of the thread a note no one else sees (Slack's
    ephemeral messages)."""

    async def tell(self, person_id: str, text: str) -> bool:
        """Show ``text`` (Markdown) to ``person_id`` alone; False where it could not."""
        ...


TaskStatus = Literal["pending", "in_progress", "complete", "error"]


@dataclass(frozen=True, slots=True)
class StreamTask:
    """A card in a natively streamed message: a tool call, or an item of the plan."""

    id: str
    title: str
    status: TaskStatus
    details: str | None = None


@dataclass(frozen=True, slots=True)
class StreamLimits:
    budget_key: str
    """What the stream methods' budgets are shared by (a Slack workspace)."""
    starts_per_minute: float
    appends_per_minute: float
    stops_per_minute: float
    max_chars: int
    """Text one streamed message takes before the reply rolls over to a new stream."""
    max_age: float
    """Seconds after its start when a stream is stopped and the reply rolls over (the
    platform stops taking appends some time later)."""
    prefer: bool = False
    """Stream natively even when the start budget makes the first text wait (``native``
    mode); otherwise (``auto``) edits are used whenever a stream could not start at once."""


@runtime_checkable
class NativeStreams(Protocol):
    """A platform's own streamed messages (Slack's ``chat.startStream`` family), offered by a
    surface as its ``streams`` attribute. Text is appended, never replaced; any failure other
    than a rate limit makes the presenter go back to editing a message."""

    @property
    def stream_limits(self) -> StreamLimits: ...

    async def start(self, text: str, tasks: Sequence[StreamTask], plan: str | None) -> str | None:
        """Start a streamed reply showing ``text``; its id, or None where streaming is not
        offered (the channel, the recipient unknown, the mode)."""
        ...

    async def append(
        self, stream_id: str, text: str, tasks: Sequence[StreamTask], plan: str | None
    ) -> None: ...

    async def stop(self, stream_id: str, text: str = "") -> None:
        """End the stream; ``text`` (rendered) goes on as its last words."""
        ...


def native_streams(surface: Surface) -> NativeStreams | None:
    """The surface's native streams, if it has them."""
    streams = getattr(surface, "streams", None)
    return streams if isinstance(streams, NativeStreams) else None
