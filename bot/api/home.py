"""What a person is shown of the bot outside any thread (Slack's App Home, the suggested
prompts of an assistant thread): what it can do, their recent threads, the approvals waiting
for them. Plain values; the core fills them (:meth:`bot.api.port.CoreApi.home`), an adapter
draws them."""

from __future__ import annotations

from dataclasses import dataclass

from bot.api.inbound import ThreadKey


@dataclass(frozen=True, slots=True)
class Ability:
    """One tool the bot may use, by name, with the first sentence of its description."""

    name: str
    summary: str


@dataclass(frozen=True, slots=True)
class RecentThread:
    """A thread a person spoke in: their first words there, and when they last spoke."""

    key: ThreadKey
    title: str
    at: float


@dataclass(frozen=True, slots=True)
class Waiting:
    """An approval request the person may decide now."""

    approval_id: str
    key: ThreadKey
    tool: str
    requester_name: str
    card_id: str | None
    """The card's message id on its platform (None: not posted yet)."""
    expires_at: float


@dataclass(frozen=True, slots=True)
class Home:
    abilities: tuple[Ability, ...]
    threads: tuple[RecentThread, ...]
    waiting: tuple[Waiting, ...]
