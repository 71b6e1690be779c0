"""The fake workspace's state: people, channels, messages and their edits, pins, reactions,
ephemeral notes and thread statuses. Plain data; the Web API and the test helpers change it.

``Message.shown`` is what Slack shows for a message: the text of its ``markdown`` (or
``section``) blocks when it has blocks, else ``markdown_text``, else ``text``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

ChannelKind = Literal["channel", "group", "im", "mpim"]
TEAM_ID = "T0FAKE"
TEAM_NAME = "Fake Workspace"
APP_ID = "A0FAKE"
BOT_USER = "UBOT"
BOT_ID = "BBOT"
BOT_NAME = "threadline"


@dataclass
class User:
    id: str
    name: str
    display_name: str
    real_name: str = ""
    is_bot: bool = False
    bot_id: str | None = None

    def info(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "team_id": TEAM_ID,
            "name": self.name,
            "real_name": self.real_name or self.display_name,
            "is_bot": self.is_bot,
            "profile": {
                "display_name": self.display_name,
                "real_name": self.real_name or self.display_name,
                **({"bot_id": self.bot_id} if self.bot_id else {}),
            },
        }


@dataclass
class Channel:
    id: str
    name: str
    kind: ChannelKind = "channel"
    members: set[str] = field(default_factory=set)
    status_allowed: bool = True
    """Whether ``assistant.threads.setStatus`` works here (else ``not_allowed``)."""
    pins: list[str] = field(default_factory=list)
    streaming_allowed: bool = True
    """Whether ``chat.startStream`` works here (else ``method_not_supported_for_channel_type``)."""


@dataclass
class Message:
    channel: str
    ts: str
    user: str | None
    text: str = ""
    blocks: list[dict[str, Any]] | None = None
    markdown_text: str | None = None
    thread_ts: str | None = None
    bot_id: str | None = None
    subtype: str | None = None
    versions: list[str] = field(default_factory=list)
    """What the message showed after its post and after each edit."""
    version_times: list[float] = field(default_factory=list)
    """When each version appeared (``time.monotonic()``)."""
    deleted: bool = False
    deleted_at: float | None = None
    """When it was deleted (``time.monotonic()``)."""
    reactions: dict[str, set[str]] = field(default_factory=dict)
    streaming: bool = False
    """Started by ``chat.startStream`` and neither stopped nor expired yet."""
    stream_started: float = 0.0
    recipient: str | None = None
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Task cards of a streamed message, by task id (the newest ``task_update`` of each)."""
    plan_title: str | None = None

    @property
    def shown(self) -> str:
        if self.blocks:
            parts = [
                b["text"] if b.get("type") == "markdown" else b.get("text", {}).get("text", "")
                for b in self.blocks
                if b.get("type") in {"markdown", "section"}
            ]
            return "\n".join(parts)
        if self.markdown_text is not None:
            return self.markdown_text
        return self.text

    @property
    def edits(self) -> int:
        return max(0, len(self.versions) - 1)

    @property
    def buttons(self) -> list[dict[str, Any]]:
        return [
            element
            for block in self.blocks or []
            if block.get("type") == "actions"
            for element in block.get("elements", [])
        ]

    @property
    def feedback(self) -> list[dict[str, Any]]:
        """Its ``feedback_buttons`` elements (in ``context_actions`` blocks)."""
        return [
            element
            for block in self.blocks or []
            if block.get("type") == "context_actions"
            for element in block.get("elements", [])
            if element.get("type") == "feedback_buttons"
        ]

    def record(self) -> None:
        """Keep what the message shows now as its newest version."""
        self.versions.append(self.shown)
        self.version_times.append(time.monotonic())

    def as_event(self) -> dict[str, Any]:
        """The message as Slack puts it in events and API answers."""
        out: dict[str, Any] = {"type": "message", "ts": self.ts, "text": self.text}
        if self.markdown_text is not None and not self.blocks:  # how Slack shows markdown_text
            out["text"] = self.markdown_text
            out["blocks"] = [{"type": "markdown", "text": self.markdown_text}]
        if self.user is not None:
            out["user"] = self.user
        for name in ("thread_ts", "bot_id", "subtype") + (() if "blocks" in out else ("blocks",)):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.bot_id is not None:
            out["app_id"] = APP_ID if self.bot_id == BOT_ID else "A0OTHER"
            out["bot_profile"] = {"id": self.bot_id, "name": "bot"}
        return out


@dataclass(frozen=True)
class Ephemeral:
    channel: str
    user: str
    thread_ts: str | None
    shown: str
    blocks: list[dict[str, Any]] | None = None
    ts: str = ""

    @property
    def buttons(self) -> list[dict[str, Any]]:
        return Message(self.channel, self.ts, None, blocks=self.blocks).buttons


@dataclass
class AssistantThread:
    """A thread Slack opened in the AI app's panel, and what the app set on it."""

    channel: str
    thread_ts: str
    user: str
    prompts: list[dict[str, str]] = field(default_factory=list)
    prompts_title: str | None = None
    title: str | None = None


class Workspace:
    def __init__(self, on_change: Callable[[], None]) -> None:
        self._on_change = on_change
        self._seq = itertools.count(1)
        self._base = int(time.time())
        self.users: dict[str, User] = {}
        self.channels: dict[str, Channel] = {}
        self.messages: dict[tuple[str, str], Message] = {}
        self.ephemerals: list[Ephemeral] = []
        self.statuses: dict[tuple[str, str], list[str]] = {}
        """(channel, thread_ts) → every status set there, "" when cleared."""
        self.usergroups: dict[str, set[str]] = {}
        """User group id (``S…``) → the ids of its members."""
        self.assistant_threads: dict[tuple[str, str], AssistantThread] = {}
        """(channel, thread_ts) → an assistant thread, with its prompts and title."""
        self.home_views: dict[str, list[dict[str, Any]]] = {}
        """User id → every Home view published for them, oldest first."""
        self.usergroup_handles: dict[str, str] = {}
        """User group id → its handle (``ops`` for ``@ops``); default: the id in lower case."""

    def changed(self) -> None:
        self._on_change()

    def next_ts(self) -> str:
        return f"{self._base}.{next(self._seq):06d}"

    def add_user(self, user: User) -> User:
        self.users[user.id] = user
        return user

    def add_channel(self, channel: Channel) -> Channel:
        self.channels[channel.id] = channel
        return channel

    def post(self, channel: str, user: str | None, text: str, **fields: Any) -> Message:
        message = Message(channel=channel, ts=self.next_ts(), user=user, text=text, **fields)
        message.record()
        self.messages[(channel, message.ts)] = message
        if message.thread_ts and message.bot_id == BOT_ID:
            self.statuses.setdefault((channel, message.thread_ts), []).append(
                ""
            )  # a reply clears it
        self.changed()
        return message

    def find(self, channel: str, ts: str) -> Message | None:
        message = self.messages.get((channel, ts))
        return None if message is None or message.deleted else message

    def thread(self, channel: str, root_ts: str) -> list[Message]:
        """The root and its replies, oldest first (deleted ones left out)."""
        found = [
            m
            for (c, _), m in self.messages.items()
            if c == channel and not m.deleted and (m.ts == root_ts or m.thread_ts == root_ts)
        ]
        return sorted(found, key=lambda m: m.ts)

    def set_status(self, channel: str, thread_ts: str, status: str) -> None:
        self.statuses.setdefault((channel, thread_ts), []).append(status)
        self.changed()

    def status(self, channel: str, thread_ts: str) -> str:
        """The status shown now ("" when none)."""
        history = self.statuses.get((channel, thread_ts))
        return history[-1] if history else ""
