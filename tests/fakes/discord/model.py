"""The fake Discord's records: users, members, roles, guilds, channels, messages, interactions,
and the error Discord answers with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DM, TEXT, PUBLIC_THREAD = 1, 0, 11


class ApiError(Exception):
    """An error answer in Discord's shape: ``{"code", "message"[, "errors"]}``."""

    def __init__(self, status: int, code: int, message: str, errors: dict[str, Any] | None = None):
        super().__init__(f"{status} {code} {message}")
        self.status, self.code, self.message, self.errors = status, code, message, errors

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.errors is not None:
            body["errors"] = self.errors
        return body


def unknown(kind: str, code: int) -> ApiError:
    return ApiError(404, code, f"Unknown {kind}")


@dataclass
class User:
    id: int
    username: str
    global_name: str | None = None
    bot: bool = False


@dataclass
class Member:
    user: User
    nick: str | None = None
    roles: list[int] = field(default_factory=list)


@dataclass
class Role:
    id: int
    name: str


@dataclass
class Guild:
    id: int
    name: str
    owner_id: int
    roles: dict[int, Role] = field(default_factory=dict)
    members: dict[int, Member] = field(default_factory=dict)
    everyone: int = (1 << 53) - 1
    """The permissions of its @everyone role (all of them, Administrator included, unless a
    test takes some away)."""


@dataclass
class Channel:
    id: int
    type: int
    name: str
    guild_id: int | None = None
    parent_id: int | None = None
    owner_id: int | None = None
    archived: bool = False
    locked: bool = False
    recipient: User | None = None
    pins: list[tuple[int, float]] = field(default_factory=list)
    """(message id, pinned at), oldest first."""
    pin_limit: int = 250
    typing: int = 0
    created_at: float = 0.0
    last_message_id: int | None = None
    """The newest message ever posted here (deleted or not), as Discord reports it."""
    members: set[int] = field(default_factory=set)
    """Of a thread: who has joined it (its owner, whoever posted in it)."""
    overwrites: list[dict[str, Any]] = field(default_factory=list)
    """Of a channel: its permission overwrites, as Discord gives them
    (``{"id", "type": 0 role | 1 member, "allow", "deny"}``)."""


@dataclass
class Message:
    id: int
    channel_id: int
    guild_id: int | None
    author: User
    content: str
    created_at: float
    components: list[dict[str, Any]] = field(default_factory=list)
    flags: int = 0
    webhook_id: int | None = None
    edited_at: float | None = None
    history: list[str] = field(default_factory=list)
    """Every content the message has shown, oldest first."""
    thread_id: int | None = None
    deleted: bool = False
    allowed_mentions: dict[str, Any] | None = None
    attachments: list[dict[str, Any]] = field(default_factory=list)
    """Attachment objects as Discord gives them (``url`` served by the fake's CDN)."""


@dataclass
class Interaction:
    id: int
    token: str
    type: int
    channel_id: int
    guild_id: int | None
    user: User
    data: dict[str, Any]
    message_id: int | None
    created_at: float
    callbacks: list[dict[str, Any]] = field(default_factory=list)
    followups: list[dict[str, Any]] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    """The follow-up messages as Discord returned them (ephemeral ones live nowhere else)."""
    note: dict[str, Any] | None = None
    """A click on a button of such a message: the message, as Discord sends it."""
