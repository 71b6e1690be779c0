"""A person's 👍 or 👎 on one run's final answer, and the store protocol that keeps it.

One row per run and person: a second click replaces the first (the last one wins), so a
person's feedback on an answer counts once. A thread's reset closes its feedback: a note
written afterwards about one of its answers is not kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from bot.api.inbound import ThreadKey

Value = Literal["up", "down"]
Recorded = Literal["new", "changed", "same"]
"""What a click did to the stored feedback: a first click, a different one, or the same again."""


@dataclass(frozen=True, slots=True)
class Feedback:
    run_id: str
    key: ThreadKey
    user_id: str
    user_name: str
    value: Value
    at: float
    """When it was given (seconds since the epoch); a later click moves it."""
    note: str = ""
    """What went wrong, in the person's words (a 👎 only)."""


class FeedbackStore(Protocol):
    async def record_feedback(self, feedback: Feedback) -> Recorded:
        """Keep ``feedback`` in place of the person's earlier one on the same run (its note
        stays when the value is the same, and goes when it changes)."""
        ...

    async def note_feedback(self, run_id: str, user_id: str, note: str) -> bool:
        """Add the person's note to their 👎 on the run; False when there is none open (never
        given, changed to 👍, or the thread was reset since)."""
        ...

    async def close_feedback(self, key: ThreadKey) -> None:
        """The thread was reset: its feedback stays, and takes no more notes."""
        ...

    async def feedback_since(self, since: float, limit: int) -> list[Feedback]:
        """Feedback given at or after ``since``, oldest first, at most ``limit``."""
        ...
