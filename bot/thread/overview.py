"""What a person is shown of the bot outside any thread (Slack's App Home, an assistant
thread's suggested prompts): the tools it can use, the threads the person spoke in, and the
approval requests they may decide now (the same :meth:`Policy.decide` a click asks)."""

from __future__ import annotations

from typing import Protocol

from bot.api.home import Ability, Home, Waiting
from bot.api.inbound import Author, ThreadKey
from bot.approvals.store import ApprovalStore
from bot.infra.clock import Clock
from bot.policy.who import Policy
from bot.sessions.store import PersonThreads
from bot.tools.registry import ToolRegistry

SUMMARY_CHARS = 120
THREADS = 10
"""The most recent threads shown."""
WAITING = 10
"""The most requests shown as waiting."""
LOOKED_AT = 200
"""The most pending requests read to find those a person may decide."""


class OverviewStore(PersonThreads, ApprovalStore, Protocol):
    """What the overview reads of the store."""


class Overview:
    def __init__(
        self, tools: ToolRegistry, store: OverviewStore, policy: Policy, clock: Clock
    ) -> None:
        self._tools = tools
        self._store = store
        self._policy = policy
        self._clock = clock

    def abilities(self) -> tuple[Ability, ...]:
        """The tools offered in a thread nothing has changed yet, by name."""
        return tuple(Ability(s.name, summary(s.description)) for s in self._tools.specs())

    async def home(self, person: Author, within: str) -> Home:
        """What ``person`` is shown under ``within`` (a workspace: ``slack:T123``)."""
        threads = await self._store.threads_of(person.id, within, THREADS)
        pending = await self._store.pending_approvals(within, self._clock.now(), LOOKED_AT)
        mine = [
            a
            for a in pending
            if self._policy.decide(person, a.key, a.approvers, a.requester_id).allowed
        ]
        waiting = tuple(
            Waiting(a.id, ThreadKey(a.key), a.tool, a.requester_name, a.card_id, a.expires_at)
            for a in mine[:WAITING]
        )
        return Home(self.abilities(), tuple(threads), waiting)


def summary(description: str, limit: int = SUMMARY_CHARS) -> str:
    """The first sentence of a tool's description, on one line, at most ``limit`` characters."""
    text = " ".join(description.split())
    end = text.find(". ")
    first = text if end < 0 else text[: end + 1]
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"
