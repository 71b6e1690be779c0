"""The whole store, as the composition root opens and closes it.

Each concern's Protocol lives beside the code that uses it; a store implements them all:

- :class:`bot.sessions.store.SessionStore`: sessions and their transcript
- :class:`bot.sessions.store.RecentThreads`: a channel's latest active thread
- :class:`bot.sessions.store.PersonThreads`: the threads a person spoke in
- :class:`bot.thread.deliveries.DeliveryStore`: delivery ids already answered
- :class:`bot.approvals.store.ApprovalStore`: approval requests and allow rules
- :class:`bot.scheduler.store.JobStore`: scheduled jobs
- :class:`bot.scheduler.schedules.ScheduleStore`: scheduled prompts (each with its job)
- :class:`bot.memory.model.MemoryStore`: memories, with full-text search
- :class:`bot.feedback.model.FeedbackStore`: 👍 / 👎 on answers
- :class:`bot.mcp.sign_in_waits.SignInWaitStore`: sign-ins to MCP servers waited for in threads
- :class:`bot.mcp.tokens.SignInKeep`: MCP sign-ins, sealed
- :class:`bot.mcp.form_rows.FormStore`: forms MCP servers ask people to fill in, for any worker

SQLite (:mod:`bot.storage.sqlite.store`) and PostgreSQL (:mod:`bot.storage.postgres.store`) implement
them; ``tests/bot/storage/test_contract.py`` is the suite every implementation passes.
"""

from __future__ import annotations

from typing import Protocol

from bot.approvals.store import ApprovalStore
from bot.feedback.model import FeedbackStore
from bot.mcp.form_rows import FormStore
from bot.mcp.sign_in_waits import SignInWaitStore
from bot.mcp.tokens import SignInKeep
from bot.memory.model import MemoryStore
from bot.scheduler.schedules import ScheduleStore
from bot.scheduler.store import JobStore
from bot.sessions.store import PersonThreads, RecentThreads, SessionStore
from bot.thread.deliveries import DeliveryStore


class Store(
    SessionStore,
    RecentThreads,
    PersonThreads,
    DeliveryStore,
    ApprovalStore,
    JobStore,
    ScheduleStore,
    MemoryStore,
    FeedbackStore,
    SignInWaitStore,
    SignInKeep,
    FormStore,
    Protocol,
):
    async def open(self) -> None:
        """Create or migrate the schema. Idempotent."""
        ...

    async def close(self) -> None: ...

    async def problem(self) -> str | None:
        """None while the store answers; else why not, in a few words (``/readyz``)."""
        ...
