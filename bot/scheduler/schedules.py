"""Scheduled prompts as the store keeps them, and what the store does with them.

Each schedule has one job in the scheduler's table (:func:`job_for`) that wakes the scheduler
when the prompt is due; the store adds and removes the two together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from bot.api.inbound import ThreadKey
from bot.llm.messages import UserMessage
from bot.scheduler.jobs import Job

PROMPT_JOB = "scheduled_prompt"
Full = Literal["thread", "channel"]
"""Which limit refused a new schedule."""


@dataclass(frozen=True, slots=True)
class Schedule:
    id: str
    """Assigned by the store (``s12``); empty in a schedule not stored yet."""
    key: str
    """The thread it runs in."""
    channel: str
    """The thread's channel, as its adapter names it (for the per-channel limit)."""
    prompt: str
    when: str
    """As it was asked for (``in 10 minutes``, ``0 9 * * 1-5``)."""
    cron: str | None
    """A recurring schedule's expression; None: it runs once."""
    zone: str
    """The time zone its cron expression is read in."""
    next_at: float
    """When it runs next (seconds since the epoch)."""
    author_id: str
    author_name: str
    """The person who scheduled it: the run is theirs, and so are its approvals."""
    created_at: float


def job_for(schedule: Schedule) -> Job:
    """The job that wakes the scheduler when ``schedule`` is due."""
    return Job(f"prompt:{schedule.id}", PROMPT_JOB, schedule.next_at, {"schedule_id": schedule.id})


class ScheduleStore(Protocol):
    async def add_schedule(
        self, draft: Schedule, *, per_thread: int, per_channel: int
    ) -> Schedule | Full:
        """Store ``draft`` with a new id and its job (:func:`job_for`), unless its thread holds
        ``per_thread`` schedules or its channel ``per_channel`` already: checked and added in
        one step, so that concurrent requests never pass a limit. Returns the stored schedule,
        or which limit was reached."""
        ...

    async def get_schedule(self, schedule_id: str) -> Schedule | None: ...

    async def schedules_of(self, key: str) -> list[Schedule]:
        """The thread's schedules, the next to run first."""
        ...

    async def claim_schedule(
        self,
        schedule_id: str,
        due_at: float,
        next_at: float | None,
        arrival: tuple[ThreadKey, UserMessage] | None = None,
    ) -> bool:
        """Take the run due at ``due_at``: a recurring schedule moves on to ``next_at``, a one-off
        (``next_at`` None) is removed. Only one caller gets True for one run. With ``arrival``
        (the run's message, with its event id), the message is accepted in the same transaction
        (as :meth:`bot.thread.deliveries.DeliveryStore.accept` does), so a process that dies once the
        run is claimed leaves the message to be answered after a restart or by another worker."""
        ...

    async def delete_schedule(self, key: str, schedule_id: str) -> Schedule | None:
        """Remove the thread's schedule and its job; the removed schedule, or None when the
        thread has no schedule with that id."""
        ...
