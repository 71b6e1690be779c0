"""The edit budget shared by every stream that edits through one platform limit.

Slack allows about 50 ``chat.update`` calls a minute for a whole workspace; Discord limits
edits per channel. Every reply stream and todo panel behind one ``SurfaceLimits.budget_key``
takes its edits from one :class:`EditBudget`:

- edits are spaced ``60 / edits_per_minute`` seconds apart (a burst of ``burst`` allowed);
- final edits and approval cards (:attr:`Priority.FINAL`) go before interim edits, and those
  before spare calls (a "Working…" message that only helps while nothing else waits);
- within a priority, first come first served, and a waiting stream holds one place only, so
  streams that edit again go to the back of the queue (round robin);
- interim edits keep ``reserve`` edits of the budget in hand: a final edit (or an approval
  card) may use them and go at once, where interim edits wait for the steady pace, so a
  finished answer does not wait behind the pacing of its own stream;
- a 429 from the platform (:meth:`EditBudget.note_rate_limited`) pauses the whole key for its
  ``Retry-After``, and one the pacing did not foresee slows the pace (it recovers a little with
  every edit that goes through, never above the documented rate).

With several workers on one store (PostgreSQL), a key with a rate is paced by the store instead
(:class:`~bot.cluster.shared_rate.SharedPace`): the queue above stays each worker's own, the
interval, the reserve and the pauses are the workers' together. Alone (SQLite) nothing changes.

:class:`EditScheduler` computes who goes next and when; :meth:`EditBudget.acquire` is the one
place that sleeps, through the injected clock. :class:`EditMeter` records each budget's waits
and grants in ``/metrics``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from enum import IntEnum

from bot.api.surface import SurfaceLimits
from bot.cluster.shared_rate import SLOWER, SharedPace, SharedRates
from bot.infra import metrics
from bot.infra.clock import Clock, sleep_until_set
from bot.present.sweep import DraftSweeper


class Priority(IntEnum):
    FINAL = 0
    """The last edit of a reply, an approval card."""
    INTERIM = 1
    """A streaming edit that a later one will supersede."""
    SPARE = 2
    """A post that only helps while nothing else waits (a "Working…" control message)."""


SHARED_POST_BURST = 2
"""Posts at once of a worker that lost the store (it paces a channel's posts alone, at a
fraction of the rate). With the store, the workers together keep the channel's sliding window
(``SurfaceLimits.post_window``) as one worker alone does."""
RECOVER = 0.97
"""How much each granted edit shrinks a stretched interval back toward the documented one."""
MAX_STRETCH = 4.0


class EditScheduler:
    """Pure bookkeeping: places in the queue and the time the next edit may go."""

    def __init__(
        self,
        edits_per_minute: float | None,
        *,
        burst: int = 1,
        reserve: int = 0,
        window: int = 0,
    ) -> None:
        """``window``: instead of a burst, at most this many calls in any ``window`` intervals
        (a sliding window, as Slack counts a channel's posts): a burst of ``window`` whenever
        the last ``window`` intervals were quiet."""
        if edits_per_minute is not None and edits_per_minute <= 0:
            raise ValueError("edits_per_minute must be positive (or None for no cap)")
        self.base_interval = 0.0 if edits_per_minute is None else 60.0 / edits_per_minute
        self.interval = self.base_interval
        self._window = max(0, window)
        self._granted: deque[float] = deque(maxlen=self._window or 1)
        """The times of the last ``window`` calls."""
        self._burst = max(0, (window or burst) - 1)
        self._reserve = max(0, reserve)
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

    def priority_of(self, owner: object) -> Priority:
        return self._places[owner][0]

    def pause(self, until: float, *, now: float | None = None) -> None:
        """A 429 says nobody edits before ``until``; given ``now``, a 429 that came while the
        pace said there was room also slows the pace (the platform allows less than we thought)."""
        if now is not None and now >= self.ready_at(Priority.INTERIM) and self.base_interval > 0:
            self.interval = min(self.interval * SLOWER, self.base_interval * MAX_STRETCH)
        self._paused_until = max(self._paused_until, until)

    def ready_at(self, priority: Priority = Priority.INTERIM) -> float:
        """When the budget allows the next edit of ``priority``."""
        room = self._burst + (self._reserve if priority is Priority.FINAL else 0)
        ready = max(self._next - room * self.interval, self._paused_until)
        if self._window and len(self._granted) == self._window:
            ready = max(ready, self._granted[0] + self._window * self.interval)
        return ready

    def finals(self) -> int:
        """Final edits waiting."""
        return sum(1 for priority, _ in self._places.values() if priority is Priority.FINAL)

    def wait_estimate(self, now: float) -> float:
        """Seconds a final edit asked for now would wait: the finals already queued go first."""
        ahead = self.finals()
        start = max(self.ready_at(Priority.FINAL), now)
        return start - now + ahead * self.interval

    def head(self) -> object | None:
        if not self._places:
            return None
        return min(self._places.items(), key=lambda item: item[1])[0]

    def due(self, owner: object, now: float) -> float | None:
        """When ``owner`` may edit, or None while another place comes first."""
        if self.head() is not owner:
            return None
        return max(self.ready_at(self._places[owner][0]), now)

    def grant(self, owner: object, now: float) -> None:
        """``owner`` edits now: it leaves the queue and the budget moves on."""
        self._places.pop(owner, None)
        self._next = max(self._next, now) + self.interval
        self._granted.append(now)
        self.interval = max(self.base_interval, self.interval * RECOVER)

    def __len__(self) -> int:
        return len(self._places)


class EditBudget:
    """One key's budget; :meth:`acquire` before every edit."""

    def __init__(
        self,
        clock: Clock,
        edits_per_minute: float | None,
        *,
        burst: int = 1,
        reserve: int = 0,
        platform: str | None = "",
        pace: SharedPace | None = None,
        window: int = 0,
    ) -> None:
        """``platform`` labels the edit metrics; None: not an edit budget (no metrics).
        ``pace``: the rate shared with other workers (it replaces this budget's own pace).
        ``window``: a sliding window of this many calls instead of a burst (:class:`EditScheduler`)."""
        self._clock = clock
        self._pace = pace
        local_rate = None if pace is not None else edits_per_minute
        self.scheduler = EditScheduler(local_rate, burst=burst, reserve=reserve, window=window)
        self._turn_waiters: dict[object, asyncio.Future[None]] = {}
        self._metered = None if platform is None else EditMeter(platform, edits_per_minute)
        self._promoted: dict[object, asyncio.Event] = {}
        """Set when a waiting owner's place becomes final (its wait may be shorter now)."""

    async def acquire(
        self,
        owner: object,
        priority: Priority = Priority.INTERIM,
        interrupt: asyncio.Event | None = None,
    ) -> bool:
        """Return True when ``owner`` may make one edit; it holds one place while it waits.

        False (and the place given up) when ``interrupt`` is set by the time ``owner`` is
        promoted (:meth:`promote`): the owner has something else to do first.
        """
        sched = self.scheduler
        if sched.holds(owner):
            raise RuntimeError("an owner waits for one edit at a time")
        sched.request(owner, priority)
        began = self._clock.monotonic()
        try:
            with self._metered.waiting() if self._metered else contextlib.nullcontext():
                while True:
                    if interrupt is not None and interrupt.is_set():
                        return False
                    now = self._clock.monotonic()
                    due = sched.due(owner, now)
                    if due is None:
                        await self._wait_for_turn(owner)
                        continue
                    if self._pace is not None:
                        final = sched.priority_of(owner) is Priority.FINAL
                        due = max(due, await self._pace.due(final, len(sched)))
                        now = self._clock.monotonic()
                        if sched.head() is not owner:
                            continue
                    if due > now:
                        promoted = self._promoted.setdefault(owner, asyncio.Event())
                        await sleep_until_set(self._clock, due - now, promoted)
                        promoted.clear()
                    else:
                        sched.grant(owner, now)
                        if self._pace is not None:
                            self._pace.take(now)
                        if self._metered is not None:
                            self._metered.granted(priority.name.lower(), now - began)
                        return True
        finally:
            sched.cancel(owner)
            self._promoted.pop(owner, None)
            self._kick()

    async def now_or_never(self, owner: object, priority: Priority = Priority.INTERIM) -> bool:
        """True when ``owner`` may make one edit at once (it is granted); False, and nothing
        held or waited for, when another waits or the pace (this worker's, or the one shared
        with the other workers) has no room right now."""
        sched = self.scheduler
        if len(sched) or sched.ready_at(priority) > self._clock.monotonic():
            return False
        if self._pace is not None and not await self._pace.now_or_never(priority is Priority.FINAL):
            return False
        now = self._clock.monotonic()
        sched.grant(owner, now)
        if self._pace is not None:
            self._pace.take(now)
        if self._metered is not None:
            self._metered.granted(priority.name.lower(), 0.0)
        return True

    def promote(self, owner: object) -> None:
        """Make ``owner``'s waiting place (if any) a final one."""
        if self.scheduler.holds(owner):
            self.scheduler.request(owner, Priority.FINAL)
            promoted = self._promoted.get(owner)
            if promoted is not None:
                promoted.set()
            self._kick()

    def note_rate_limited(self, retry_after: float) -> None:
        """The platform answered 429: nobody behind this key edits for ``retry_after`` seconds."""
        now = self._clock.monotonic()
        self.scheduler.pause(now + max(0.0, retry_after), now=now)
        if self._pace is not None:
            self._pace.note_rate_limited(retry_after)

    def wait_estimate(self) -> float:
        """Seconds a final edit asked for now would wait for its turn."""
        now = self._clock.monotonic()
        if self._pace is None:
            return self.scheduler.wait_estimate(now)
        return max(
            self.scheduler.wait_estimate(now), self._pace.wait_estimate(self.scheduler.finals())
        )

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
    """The one :class:`EditBudget` of each ``budget_key``; with ``shared``, the keys that have
    a rate share it with the other workers of the store."""

    def __init__(self, clock: Clock, *, burst: int = 1, shared: SharedRates | None = None) -> None:
        self._clock = clock
        self._burst = burst
        self.shared = shared
        self._budgets: dict[str, EditBudget] = {}
        self.sweeper = DraftSweeper(clock, self._delete_pace if shared is not None else None)
        """Deletes the drafts that finals posted anew leave behind."""

    def get(self, limits: SurfaceLimits) -> EditBudget:
        budget = self._budgets.get(limits.budget_key)
        if budget is None:
            key, rate, reserve = limits.budget_key, limits.edits_per_minute, limits.final_reserve
            budget = EditBudget(
                self._clock,
                rate,
                burst=self._burst,
                reserve=reserve,
                platform=platform_of(key),
                pace=self._pace(key, rate, self._burst, reserve)
                if limits.workers_share_budget
                else None,
            )
            self._budgets[key] = budget
        return budget

    def posts(self, limits: SurfaceLimits) -> EditBudget | None:
        """The budget of new messages behind ``limits.post_key`` (a Slack channel), if paced:
        at most ``post_window`` in any ``post_window`` intervals, counted by the store for all
        the workers together where they share one."""
        if limits.post_key is None or limits.posts_per_minute is None:
            return None
        key, rate = limits.post_key, limits.posts_per_minute
        budget = self._budgets.get(key)
        if budget is None:
            budget = self._budgets[key] = EditBudget(
                self._clock,
                rate,
                platform=None,
                pace=self._pace(key, rate, SHARED_POST_BURST, 0, limits.post_window),
                window=limits.post_window,
            )
        return budget

    def for_key(self, key: str, per_minute: float | None, burst: int = 1) -> EditBudget:
        """The budget of another rate-limited method (native streams' starts, appends, stops)."""
        budget = self._budgets.get(key)
        if budget is None:
            budget = self._budgets[key] = EditBudget(
                self._clock,
                per_minute,
                burst=burst,
                platform=None,
                pace=self._pace(key, per_minute, burst, 0),
            )
        return budget

    def _delete_pace(self, key: str, per_minute: float, burst: int) -> EditBudget:
        """The deletions of drafts behind a key, paced with the other workers'."""
        return self.for_key(key, per_minute, burst)

    def _pace(
        self, key: str, rate: float | None, burst: int, reserve: int, window: int = 0
    ) -> SharedPace | None:
        if self.shared is None or rate is None:
            return None
        return self.shared.pace(key, rate, burst=burst, reserve=reserve, window=window)

    async def aclose(self) -> None:
        await self.sweeper.aclose()
        if self.shared is not None:
            await self.shared.aclose()


def platform_of(budget_key: str) -> str:
    """``slack:T123`` → ``slack``: a budget's key names a workspace or channel, not a label."""
    return budget_key.partition(":")[0]


class EditMeter:
    """The metrics of one edit budget."""

    def __init__(self, platform: str, edits_per_minute: float | None) -> None:
        self._platform = platform
        self._waiting = metrics.EDITS_WAITING.labels(platform)
        self._waited = metrics.EDIT_WAIT_SECONDS.labels(platform)
        if edits_per_minute is not None:
            metrics.EDIT_BUDGET.labels(platform).set(edits_per_minute)

    @contextmanager
    def waiting(self) -> Iterator[None]:
        self._waiting.inc()
        try:
            yield
        finally:
            self._waiting.dec()

    def granted(self, priority: str, waited: float) -> None:
        metrics.EDITS.labels(self._platform, priority).inc()
        self._waited.observe(waited)
