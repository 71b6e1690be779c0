"""Edit budgets shared by workers: the pace of a rate-limited platform method, kept in the store.

Slack allows about 50 ``chat.update`` a minute for a whole workspace, however many workers send
them. A store shared by workers (PostgreSQL) keeps one pace per budget key on its own clock
(GCRA: the theoretical time of the next edit; for a key counted in a sliding window, such as a
Slack channel's posts, also the times of its last slots); a worker takes the next *slots* of
that pace, a few at a time, and makes its edits at those times. A 429 that one worker sees
pauses the key for all of them: the pause is kept with the pace (no slot is given inside it)
and told to every listening worker at once. :mod:`bot.cluster.shared_rate` is the worker's side.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Slots:
    """What the store granted; every time is in seconds from when it answered."""

    delays: tuple[float, ...]
    """When each granted edit may go (ascending; 0: at once)."""
    next_in: float
    """When the slot after the last granted one would be."""
    paused_for: float
    """How long the key is still paused (0: not paused)."""
    workers: int
    """Workers that took slots of this key lately (this one included)."""


class PauseListening(Protocol):
    @property
    def alive(self) -> bool: ...

    async def close(self) -> None: ...


@runtime_checkable
class BudgetStore(Protocol):
    async def take_slots(
        self,
        key: str,
        worker: str,
        *,
        interval_s: float,
        room: float,
        wanted: int,
        horizon_s: float,
        must: bool,
        window: int = 0,
    ) -> Slots:
        """Up to ``wanted`` slots of ``key``'s pace (one edit every ``interval_s``), the first
        up to ``room`` intervals ahead of the pace; slots further than ``horizon_s`` away are
        not given, except the first when ``must``. ``window`` > 0: at most that many slots of
        ``key`` in any ``window`` intervals, whichever workers took them (a sliding window, as
        Slack counts a channel's posts). Raises :class:`bot.errors.StoreError` when
        the store does not answer."""
        ...

    async def pause_budget(self, key: str, seconds: float, *, slower: float = 1.0) -> float:
        """Nobody takes slots of ``key`` for ``seconds``; every listener hears it. A 429 the
        pace did not foresee also stretches the interval of ``key``'s pace by ``slower`` (each
        slot given then shrinks it back a little, never below the interval asked for). Returns
        how long the key is paused. Raises :class:`bot.errors.StoreError` when the store does
        not answer."""
        ...

    async def listen_budgets(self, heard: Callable[[str, float], None]) -> PauseListening:
        """Hear the pauses: ``heard(key, seconds)`` for each, on a connection of its own."""
        ...
