"""Limits per run and per thread and day, in tokens and cost, with plain words when reached."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

from bot.llm.messages import Usage
from bot.sessions.model import Session


class LimitConfig(Protocol):
    @property
    def run_max_tokens(self) -> int | None: ...
    @property
    def run_max_cost_usd(self) -> float | None: ...
    @property
    def day_max_tokens(self) -> int | None: ...
    @property
    def day_max_cost_usd(self) -> float | None: ...


def today(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d")


def charge(session: Session, usage: Usage, cost: float, now: float) -> float:
    """Add a model call's usage to the thread's totals and today's; returns ``cost``."""
    session.usage = session.usage + usage
    session.cost_usd += cost
    day = today(now)
    if session.day != day:
        session.day, session.day_tokens, session.day_cost_usd = day, 0, 0.0
    session.day_tokens += usage.total
    session.day_cost_usd += cost
    return cost


def limit_reached(
    c: LimitConfig, usage: Usage, cost: float, session: Session, now: float
) -> str | None:
    """Why the run may not call the model again, in plain words; None when it may."""
    if c.run_max_tokens is not None and usage.total >= c.run_max_tokens:
        return f"This request reached its token limit ({c.run_max_tokens:,} tokens), so I stopped here. Ask me to continue."
    if c.run_max_cost_usd is not None and cost >= c.run_max_cost_usd:
        return f"This request reached its cost limit (${c.run_max_cost_usd:.2f}), so I stopped here. Ask me to continue."
    if session.day != today(now):
        return None
    if c.day_max_tokens is not None and session.day_tokens >= c.day_max_tokens:
        return f"This thread has used its {c.day_max_tokens:,} tokens for today. It can continue tomorrow (UTC)."
    if c.day_max_cost_usd is not None and session.day_cost_usd >= c.day_max_cost_usd:
        return f"This thread has reached today's cost limit (${c.day_max_cost_usd:.2f}). It can continue tomorrow (UTC)."
    return None
