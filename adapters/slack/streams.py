"""Slack's native streaming (``chat.startStream`` / ``appendStream`` / ``stopStream``) for one
thread, offered to the presenter as a surface's ``streams``; nothing decided here.

Outside DMs a stream needs its recipient (``recipient_user_id`` + ``recipient_team_id``): the
person whose message the reply answers, remembered per thread when their message arrives
(:class:`StreamSupport`, bounded). A thread whose asker is not known (a run resumed after a
restart) gets no stream, and edits are used. A channel where Slack refuses streaming is
remembered and not tried again. Tool calls are task cards (``task_update`` chunks, shown in
``timeline`` mode); the todo list is a ``plan_update`` chunk with the todos as tasks too.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from adapters.slack.api import SlackApi
from bot.api.surface import StreamLimits, StreamTask

Mode = Literal["auto", "native", "edit"]
REMEMBERED = 10_000
STREAM_CHARS = 10_000
"""Text one streamed message takes before the reply rolls over (a markdown block holds 12,000)."""
REFUSED = frozenset(
    {
        "method_not_supported_for_channel_type",
        "not_allowed",
        "not_allowed_token_type",
        "feature_not_enabled",
        "missing_scope",
        "unknown_method",
        "missing_recipient_user_id",
        "missing_recipient_team_id",
        "user_not_found",
        "channel_type_not_supported",
    }
)
"""``chat.startStream`` answers meaning streaming does not work in this channel."""


@dataclass(frozen=True, slots=True)
class StreamSettings:
    mode: Mode
    starts_per_minute: float
    appends_per_minute: float
    max_age: float


class StreamSupport:
    """Shared by every thread of a workspace: the mode, the channels where Slack refused
    streaming, and the person each recent thread is answering (all bounded)."""

    def __init__(self, team_id: str, settings: StreamSettings, capacity: int = REMEMBERED) -> None:
        self.team_id = team_id
        self.settings = settings
        self.limits = StreamLimits(
            budget_key=f"slack:{team_id}:stream",
            starts_per_minute=settings.starts_per_minute,
            appends_per_minute=settings.appends_per_minute,
            stops_per_minute=settings.starts_per_minute,
            max_chars=STREAM_CHARS,
            max_age=settings.max_age,
            prefer=settings.mode == "native",
        )
        self._refused: OrderedDict[str, None] = OrderedDict()
        self._recipients: OrderedDict[str, str] = OrderedDict()
        self._capacity = capacity

    @property
    def enabled(self) -> bool:
        return self.settings.mode != "edit"

    def allowed(self, channel: str) -> bool:
        return channel not in self._refused

    def refuse(self, channel: str) -> None:
        _remember(self._refused, channel, None, self._capacity)

    def answering(self, thread: str, user: str) -> None:
        """``user`` wrote in ``thread`` last: the thread's next stream is for them."""
        _remember(self._recipients, thread, user, self._capacity)

    def recipient(self, thread: str) -> str | None:
        return self._recipients.get(thread)


class SlackStreams:
    """The native streams of one thread."""

    def __init__(
        self,
        api: SlackApi,
        support: StreamSupport,
        channel: str,
        thread_ts: str,
        thread: str,
        *,
        direct: bool,
    ) -> None:
        self._api = api
        self._support = support
        self._channel = channel
        self._thread_ts = thread_ts
        self._thread = thread
        self._direct = direct

    @property
    def stream_limits(self) -> StreamLimits:
        return self._support.limits

    async def start(self, text: str, tasks: Sequence[StreamTask], plan: str | None) -> str | None:
        support = self._support
        if not support.enabled or not support.allowed(self._channel):
            return None
        recipient: dict[str, str] = {}
        user = support.recipient(self._thread)
        if user is not None:
            recipient = {"recipient_user_id": user, "recipient_team_id": support.team_id}
        elif not self._direct:
            return None  # Slack needs to know who it streams to
        ts = await self._api.start_stream(
            self._channel, self._thread_ts, _chunks(text, tasks, plan), recipient, refused=REFUSED
        )
        if ts is None:
            support.refuse(self._channel)
        return ts

    async def append(
        self, stream_id: str, text: str, tasks: Sequence[StreamTask], plan: str | None
    ) -> None:
        await self._api.append_stream(self._channel, stream_id, _chunks(text, tasks, plan))

    async def stop(self, stream_id: str, text: str = "") -> None:
        await self._api.stop_stream(self._channel, stream_id, _chunks(text, (), None))


def _chunks(text: str, tasks: Sequence[StreamTask], plan: str | None) -> list[dict[str, Any]]:
    chunks: list[dict[str, Any]] = []
    if plan is not None:
        chunks.append({"type": "plan_update", "title": plan})
    for task in tasks:
        chunk: dict[str, Any] = {
            "type": "task_update",
            "id": task.id,
            "title": task.title,
            "status": task.status,
        }
        if task.details:
            chunk["details"] = task.details
        chunks.append(chunk)
    if text:
        chunks.append({"type": "markdown_text", "text": text})
    return chunks


def _remember(memory: OrderedDict[str, Any], key: str, value: Any, capacity: int) -> None:
    memory[key] = value
    memory.move_to_end(key)
    while len(memory) > capacity:
        memory.popitem(last=False)
