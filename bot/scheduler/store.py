"""What the scheduler needs kept: its jobs, by due time."""

from __future__ import annotations

from typing import Protocol

from bot.scheduler.jobs import Job


class JobStore(Protocol):
    async def put_job(self, job: Job) -> None:
        """Add ``job``, or replace the job with the same id."""
        ...

    async def due_jobs(self, now: float, limit: int = 100) -> list[Job]:
        """Jobs due at ``now``, earliest first."""
        ...

    async def claim_due_jobs(self, now: float, hold_s: float, limit: int = 100) -> list[Job]:
        """Jobs due at ``now``, earliest first, each claimed: its due time moves ``hold_s``
        ahead, so no other caller (another worker on the same store) gets it meanwhile. The
        runner then deletes or reschedules it; one that dies while running it leaves it due
        again after ``hold_s``."""
        ...

    async def next_due(self) -> float | None: ...

    async def delete_job(self, job_id: str) -> None: ...
