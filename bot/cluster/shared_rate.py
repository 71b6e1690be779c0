"""A budget's rate shared by the workers of one store (:mod:`bot.storage.budgets`).

Each worker keeps its own queue (:class:`~bot.present.budget.EditScheduler`: priorities, round
robin); only the *pace* is shared. When the head of a worker's queue may edit, its
:class:`SharedPace` takes the next slots of the key's pace from the store (one round trip for up
to ``MAX_BATCH`` edits) and the edit goes at its slot's time. Slots are given at most
``HORIZON`` intervals ahead, so a worker never holds a long line of them: a final edit (which
may use the key's reserve) is not stuck behind slots other workers hold, and slots a worker does
not use are few (one unused for ``GRACE`` intervals is dropped). An interim edit whose slot
would be further away asks again when it comes near; a final one takes its place in line. A key
counted in a sliding window (a Slack channel's posts) has its window kept in the store too, so
the workers together get the burst one worker alone has, and never more.

A 429 pauses the key for every worker: the pause is kept with the pace in the store, and the
others hear it at once (``LISTEN``); held slots are dropped, so after a pause the pace begins
again from the store. A 429 that came while the key was not paused also stretches the pace in
the store (by ``SLOWER``, at most four times; each slot given shrinks it back by 3%), so every
worker slows down, as one alone does. A worker that loses the store paces locally at the rate
divided by the number of workers it last saw on the key (at least ``MIN_WORKERS``), never
faster than one worker alone, and asks the store again after ``OFFLINE_RETRY_S``.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import deque
from collections.abc import Coroutine
from typing import Any

from bot.errors import StoreError
from bot.infra import metrics
from bot.infra.clock import Clock
from bot.storage.budgets import BudgetStore, PauseListening

log = logging.getLogger(__name__)

HORIZON = 1.0
"""Intervals ahead of now beyond which an interim edit is given no slot (it asks again later)."""
MAX_BATCH = 3
"""Slots asked for at once at most (as many as edits wait, up to this)."""
GRACE = 0.5
"""Intervals after its time when a slot nobody used is dropped."""
MIN_WORKERS = 2
"""Without the store a worker paces at most at the rate divided by this."""
OFFLINE_RETRY_S = 2.0
"""How long a worker that lost the store paces locally before asking it again."""
SLOWER = 1.25
"""How much a 429 the pace did not foresee stretches the interval between edits (a worker's
own pace, and the shared one: migration 0009 stretches it at most 4 times and shrinks it by 3%
with each slot, as ``budget.MAX_STRETCH`` and ``budget.RECOVER`` do a worker's own)."""


class SharedRates:
    """This worker's side of the shared budgets: one :class:`SharedPace` per key, the task that
    tells the store about 429s, and the connection that hears the other workers' pauses."""

    def __init__(self, store: BudgetStore, worker: str, clock: Clock) -> None:
        self.store = store
        self.worker = worker
        self.clock = clock
        self._paces: dict[str, SharedPace] = {}
        self._listening: PauseListening | None = None
        self._listen_after = -math.inf
        self._tasks: set[asyncio.Task[None]] = set()

    def pace(
        self, key: str, per_minute: float, *, burst: int, reserve: int, window: int = 0
    ) -> SharedPace:
        pace = self._paces.get(key)
        if pace is None:
            pace = self._paces[key] = SharedPace(
                self, key, per_minute, burst=burst, reserve=reserve, window=window
            )
        return pace

    def heard(self, key: str, seconds: float) -> None:
        """Another worker (or this one) paused ``key`` for ``seconds``."""
        pace = self._paces.get(key)
        if pace is not None:
            pace.pause(seconds)

    async def listen(self) -> None:
        """Listen for pauses, if not already (tried again at most every ``OFFLINE_RETRY_S``)."""
        if self._listening is not None and self._listening.alive:
            return
        now = self.clock.monotonic()
        if now < self._listen_after:
            return
        self._listen_after = now + OFFLINE_RETRY_S
        try:
            self._listening = await self.store.listen_budgets(self.heard)
        except StoreError as exc:
            log.warning("not hearing other workers' edit pauses for now: %s", exc)

    def tell(self, key: str, seconds: float, *, slower: float = 1.0) -> None:
        """Tell the store (so every worker) that ``key`` is paused for ``seconds``, and its pace
        is ``slower``."""
        self._spawn(self._tell(key, seconds, slower))

    async def _tell(self, key: str, seconds: float, slower: float) -> None:
        try:
            await self.store.pause_budget(key, seconds, slower=slower)
        except StoreError as exc:
            log.warning("could not share a pause of %s with the other workers: %s", key, exc)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._listening is not None:
            listening, self._listening = self._listening, None
            await listening.close()


class SharedPace:
    """The pace of one key as this worker sees it: the slots it holds, the pause, and the local
    pace it falls back on without the store. Times are on the worker's monotonic clock."""

    def __init__(
        self,
        rates: SharedRates,
        key: str,
        per_minute: float,
        *,
        burst: int,
        reserve: int,
        window: int = 0,
    ) -> None:
        """``window`` > 0: the store gives at most this many slots in any ``window`` intervals,
        to all the workers together (a sliding window: that many at once after a quiet spell,
        as one worker alone allows); ``burst`` is then only the local pace's, without the store."""
        if per_minute <= 0:
            raise ValueError("per_minute must be positive")
        self._rates = rates
        self._clock = rates.clock
        self.key = key
        self.interval = 60.0 / per_minute
        self._burst = max(0, burst - 1)
        self._reserve = max(0, reserve)
        self._window = max(0, window)
        self._slots: deque[float] = deque()
        self._expiry: deque[float] = deque()
        """When each slot held is dropped unused: ``GRACE`` intervals after its time as seen
        from when it was asked for (an answer that came late leaves less of its grace)."""
        self._paused_until = -math.inf
        self._ask_at = -math.inf
        """An interim edit given no slot asks again then."""
        self._next_at = -math.inf
        """When the store said the next slot would be (for estimates)."""
        self._offline_until = -math.inf
        self._local_next = -math.inf
        self.workers = 1
        """Workers seen on this key at the last answer of the store."""
        self._asking = asyncio.Lock()

    @property
    def offline(self) -> bool:
        """Pacing locally: the store did not answer lately."""
        return self._clock.monotonic() < self._offline_until

    @property
    def paused(self) -> bool:
        return self._clock.monotonic() < self._paused_until

    def _room(self, final: bool) -> int:
        return self._burst + (self._reserve if final else 0)

    def _shared_room(self, final: bool) -> int:
        """The room asked of the store: a window's burst, where the store keeps a window."""
        if self._window:
            return self._window - 1 + (self._reserve if final else 0)
        return self._room(final)

    async def due(self, final: bool, waiting: int) -> float:
        """When the head of the queue (a ``final`` edit or not, with ``waiting`` edits queued in
        all) may edit: its slot, taken from the store when none is held."""
        async with self._asking:
            now = self._clock.monotonic()
            while self._slots and self._expiry[0] < now:
                self._slots.popleft()
                self._expiry.popleft()
            if now < self._paused_until:
                return self._paused_until
            if self._slots:
                return self._slots[0]
            if now < self._offline_until:
                return self._local_ready(final)
            if not final and now < self._ask_at:
                return self._ask_at
            return await self._ask(final, waiting)

    async def now_or_never(self, final: bool) -> bool:
        """Whether a slot is free right now (then held, for :meth:`take`); asks the store for
        one due at once only, so nothing is held for later when none is."""
        async with self._asking:
            now = self._clock.monotonic()
            while self._slots and self._expiry[0] < now:
                self._slots.popleft()
                self._expiry.popleft()
            if now < self._paused_until:
                return False
            if self._slots:
                return self._slots[0] <= now
            if now < self._offline_until:
                return self._local_ready(final) <= now
            ready = await self._ask(final, 1, horizon=0.0)
            if self.offline:
                return ready <= self._clock.monotonic()
            return bool(self._slots) and self._slots[0] <= self._clock.monotonic()

    async def _ask(self, final: bool, waiting: int, *, horizon: float = HORIZON) -> float:
        asked = self._clock.monotonic()
        try:
            got = await self._rates.store.take_slots(
                self.key,
                self._rates.worker,
                interval_s=self.interval,
                room=float(self._shared_room(final)),
                wanted=max(1, min(MAX_BATCH, waiting)),
                horizon_s=horizon * self.interval,
                must=final and horizon > 0,
                window=self._window,
            )
        except StoreError as exc:
            metrics.shared_budget_call("failed")
            now = self._clock.monotonic()
            if now >= self._offline_until:
                log.warning(
                    "edits behind %s pace locally at 1/%d of the rate for now: %s",
                    self.key,
                    max(MIN_WORKERS, self.workers),
                    exc,
                )
            self._offline_until = now + OFFLINE_RETRY_S
            return self._local_ready(final)
        at = self._clock.monotonic()
        metrics.shared_budget_call("granted" if got.delays else "later")
        if self._offline_until > -math.inf:
            log.info("edits behind %s are paced with the other workers again", self.key)
            self._offline_until = -math.inf
        await self._rates.listen()  # the store answers: hear the other workers' pauses too
        self.workers = max(1, got.workers)
        self._slots.extend(at + delay for delay in got.delays)
        self._expiry.extend(asked + delay + GRACE * self.interval for delay in got.delays)
        self._next_at = at + got.next_in
        self._ask_at = at + max(0.0, got.next_in - HORIZON * self.interval)
        if got.paused_for > 0:
            self._paused_until = max(self._paused_until, at + got.paused_for)
        if self._slots:
            return max(self._slots[0], self._paused_until)
        return max(self._ask_at, self._paused_until)

    def _local_interval(self) -> float:
        return self.interval * max(MIN_WORKERS, self.workers)

    def _local_ready(self, final: bool) -> float:
        ready = self._local_next - self._room(final) * self._local_interval()
        return max(ready, self._paused_until)

    def take(self, now: float) -> None:
        """An edit goes now, on the slot it was due at (or on the local pace)."""
        if self._slots and self._slots[0] <= now:
            self._slots.popleft()
            self._expiry.popleft()
        else:
            self._local_next = max(self._local_next, now) + self._local_interval()

    def pause(self, seconds: float) -> None:
        """Nobody edits behind this key for ``seconds``; the slots held are given up."""
        self._paused_until = max(self._paused_until, self._clock.monotonic() + max(0.0, seconds))
        self._slots.clear()
        self._expiry.clear()

    def note_rate_limited(self, retry_after: float) -> None:
        """This worker got a 429: paused here at once, and in the store for every worker. One
        that came while the key was not paused (its edit went at a slot of the pace) was not
        foreseen: it also slows the pace for every worker, as it does a worker alone."""
        slower = 1.0 if self.paused else SLOWER
        self.pause(retry_after)
        self._rates.tell(self.key, retry_after, slower=slower)

    def wait_estimate(self, finals_ahead: int) -> float:
        """Seconds a final edit asked for now would wait: its slot, then a turn of every worker
        for each final queued here before it (the other workers' finals are not known here,
        so each of ours counts as one round of all of them)."""
        now = self._clock.monotonic()
        if self._slots:
            start = self._slots[0]
        elif now < self._offline_until:
            start = self._local_ready(True)
        else:
            start = self._next_at - self._shared_room(True) * self.interval
        start = max(start, self._paused_until, now)
        return start - now + finals_ahead * self.interval * self.workers
