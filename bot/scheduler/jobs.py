"""A scheduled job as the store keeps it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Job:
    id: str
    """Stable: scheduling the same id again replaces the job (``expire:<approval>``)."""
    kind: str
    """Which handler runs it."""
    due_at: float
    payload: dict[str, Any] = field(default_factory=dict)
    interval_s: float | None = None
    """Repeats every ``interval_s`` seconds; None: runs once."""
    attempts: int = 0
    last_error: str | None = None
