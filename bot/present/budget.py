"""The edit budget shared by every stream that edits through one platform limit.

Slack allows about 50 ``chat.update`` calls a minute for a whole workspace; Discord limits
edits per channel. Every reply stream and todo panel behind one ``SurfaceLimits.budget_key``
takes its edits from one :class:`EditBudget`:

- edits are spaced ``60 / edits_per_minute`` seconds apart (a burst of ``burst`` allowed);
- final edits and approval cards (:attr:`Priority.FINAL`) go before interim edits;
- within a priority, first come first served, and a waiting stream holds one place only, so
  streams that edit again go to the back of the queue (round robin);
- a 429 from the platform (:meth:`EditBudget.note_rate_limited`) pauses the whole key.

:class:`EditScheduler` computes who goes next and when; :meth:`EditBudget.acquire` is the one
place that sleeps, through the injected clock.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from enum import IntEnum

from bot import metrics
from bot.clock import Clock
from bot.present.surface import SurfaceLimits


class Priority(IntEnum):
    FINAL = 0
    """The last edit of a reply, an approval card."""
    INTERIM = 1
    """A streaming edit that a later one will supersede."""


class EditScheduler:
    """Pure bookkeeping: places in the queue and the time the next edit may go."""

    def __init__(self, edits_per_minute: float | None, *, burst: int = 1) -> None:
        if edits_per_minute is not None and edits_per_minute <= 0:
            raise ValueError("edits_per_minute must be positive (or None for no cap)")
        self.interval = 0.0 if edits_per_minute is None else 60.0 / edits_per_minute
        self._slack = max(0, burst - 1) * self.interval
        self._next = -math.inf
        """Theoretical time of the next edit if edits were evenly spaced (GCRA)."""
        self._paused_until = -math.inf
        self._places: dict[object, tuple[Priority, int]] = {}
        self._seq = itertools.count()

    def request(self, owner: object, priority: Priority) -> None:
        """Take a place for ``owner``, or raise the priority of the place it holds."""
        held = self._places.get(owner)
        if held is None:
            self._places[owner] = (priority, next(self._seq))
        elif priority < held[0]:
            self._places[owner] = (priority, held[1])

    def holds(self, owner: object) -> bool:
        return owner in self._places

    def cancel(self, owner: object) -> None:
        self._places.pop(owner, None)

    def pause(self, until: float) -> None:
        self._paused_until = max(self._paused_until, until)

    def ready_at(self) -> float:
        """When the budget allows the next edit."""
        return max(self._next - self._slack, self._paused_until)

    def head(self) -> object | None:
        if not self._places:
            return None
        return min(self._places.items(), key=lambda item: item[1])[0]

    def due(self, owner: object, now: float) -> float | None:
        """When ``owner`` may edit, or None while another place comes first."""
        if self.head() is not owner:
            return None
        return max(self.ready_at(), now)

    def grant(self, owner: object, now: float) -> None:
        """``owner`` edits now: it leaves the queue and the budget moves on."""
        self._places.pop(owner, None)
        self._next = max(self._next, now) + self.interval

    def __len__(self) -> int:
        return len(self._places)


class EditBudget:
    """One key's budget; :meth:`acquire` before every edit."""

    def __init__(
        self, clock: Clock, edits_per_minute: float | None, *, burst: int = 1, platform: str = ""
    ) -> None:
        self._clock = clock
        self.scheduler = EditScheduler(edits_per_minute, burst=burst)
        self._turn_waiters: dict[object, asyncio.Future[None]] = {}
        self._metered = metrics.EditMeter(platform, edits_per_minute)

    async def acquire(self, owner: object, priority: Priority = Priority.INTERIM) -> None:
        """Return when ``owner`` may make one edit; it holds one place while it waits."""
        sched = self.scheduler
        if sched.holds(owner):
            raise RuntimeError("an owner waits for one edit at a time")
        sched.request(owner, priority)
        began = self._clock.monotonic()
        try:
            with self._metered.waiting():
                while True:
                    now = self._clock.monotonic()
                    due = sched.due(owner, now)
                    if due is None:
                        await self._wait_for_turn(owner)
                    elif due > now:
                        await self._clock.sleep(due - now)
                    else:
                        sched.grant(owner, now)
                        self._metered.granted(priority.name.lower(), now - began)
                        return
        finally:
            sched.cancel(owner)
            self._kick()

    def promote(self, owner: object) -> None:
        """Make ``owner``'s waiting place (if any) a final one."""
        if self.scheduler.holds(owner):
            self.scheduler.request(owner, Priority.FINAL)
            self._kick()

    def note_rate_limited(self, retry_after: float) -> None:
        """The platform answered 429: nobody behind this key edits for ``retry_after`` seconds."""
        self.scheduler.pause(self._clock.monotonic() + max(0.0, retry_after))

    async def _wait_for_turn(self, owner: object) -> None:
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._turn_waiters[owner] = turn
        try:
            await turn
        finally:
            self._turn_waiters.pop(owner, None)

    def _kick(self) -> None:
        """The head of the queue may have changed: let every waiter look again."""
        for turn in self._turn_waiters.values():
            if not turn.done():
                turn.set_result(None)
        self._turn_waiters.clear()


class BudgetRegistry:
    """The one :class:`EditBudget` of each ``budget_key``."""

    def __init__(self, clock: Clock, *, burst: int = 1) -> None:
        self._clock = clock
        self._burst = burst
        self._budgets: dict[str, EditBudget] = {}

    def get(self, limits: SurfaceLimits) -> EditBudget:
        budget = self._budgets.get(limits.budget_key)
        if budget is None:
            budget = EditBudget(
                self._clock, limits.edits_per_minute, burst=self._burst,
                platform=metrics.platform_of(limits.budget_key),
            )  # fmt: skip
            self._budgets[limits.budget_key] = budget
        return budget
