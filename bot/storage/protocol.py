"""The store port. SQLite implements it today; a shared PostgreSQL store is planned."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.approvals.models import ApprovalRequest, ApprovalStatus
from bot.conversation import ThreadKey
from bot.llm.messages import Message
from bot.scheduler.jobs import Job
from bot.sessions.model import RunState, Session


@dataclass(frozen=True, slots=True)
class ThreadSummary:
    key: ThreadKey
    title: str
    """The first user message, shortened."""
    updated_at: float
    message_count: int


class Store(Protocol):
    async def open(self) -> None:
        """Create or migrate the schema. Idempotent."""
        ...

    async def close(self) -> None: ...

    async def load_session(self, key: ThreadKey, now: float) -> Session:
        """The thread's session; a new empty one (not yet saved) if there is none."""
        ...

    async def has_session(self, key: ThreadKey) -> bool:
        """Whether the thread has a saved session (the bot has joined it)."""
        ...

    async def append_messages(self, session: Session, messages: Sequence[Message]) -> None:
        """Add ``messages`` to the transcript and to ``session.messages``, and persist the rest
        of the session as :meth:`save_state` does, all in one transaction."""
        ...

    async def replace_messages(self, session: Session, messages: Sequence[Message]) -> None:
        """Replace the whole transcript (compaction, repair), atomically."""
        ...

    async def save_state(self, session: Session) -> None:
        """Persist everything but the transcript: todos, usage, cost, run state, panel."""
        ...

    async def record_posted(self, key: ThreadKey, message_id: str, kind: str, now: float) -> None:
        """Remember a message the bot posted in the thread (``reply``, ``panel``, ``card``)."""
        ...

    async def posted(self, key: ThreadKey, kind: str | None = None) -> list[str]:
        """Ids of messages the bot posted in the thread, oldest first."""
        ...

    async def first_delivery(self, event_id: str, now: float) -> bool:
        """True the first time ``event_id`` is seen; False for a redelivery."""
        ...

    async def purge_deliveries(self, before: float) -> int:
        """Forget event ids seen before ``before``; returns how many."""
        ...

    async def list_threads(self, prefix: str, limit: int = 50) -> list[ThreadSummary]:
        """Threads whose key starts with ``prefix``, most recently updated first."""
        ...

    async def keys_in_state(self, state: RunState, limit: int = 1000) -> list[ThreadKey]:
        """Threads whose session is in ``state`` (``running`` after a crash), oldest first."""
        ...

    # --- approvals ---

    async def create_approval(self, request: ApprovalRequest) -> None: ...

    async def get_approval(self, approval_id: str) -> ApprovalRequest | None: ...

    async def approvals_for(self, key: str, call_ids: Sequence[str]) -> dict[str, ApprovalRequest]:
        """The thread's approval requests for these calls, by call id."""
        ...

    async def decide_approval(
        self,
        approval_id: str,
        status: ApprovalStatus,
        by_id: str | None,
        by_name: str | None,
        now: float,
    ) -> bool:
        """Record a decision exactly once: a conditional update of a pending request (unexpired,
        unless ``status`` is the expiry). True when this call made the change."""
        ...

    async def set_approval_card(self, approval_id: str, card_id: str) -> None: ...

    async def add_allow_rule(self, scope: str, tool: str, by: str, now: float) -> None: ...

    async def is_allowed(self, scope: str, tool: str) -> bool: ...

    # --- scheduled jobs ---

    async def put_job(self, job: Job) -> None:
        """Add ``job``, or replace the job with the same id."""
        ...

    async def due_jobs(self, now: float, limit: int = 100) -> list[Job]: ...

    async def next_due(self) -> float | None: ...

    async def delete_job(self, job_id: str) -> None: ...
