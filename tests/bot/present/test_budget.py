"""The shared edit budget: spacing, fairness between streams, priority, 429 pauses."""

from __future__ import annotations

import asyncio

import pytest

from bot.api.surface import SurfaceLimits
from bot.infra.clock import ManualClock
from bot.present.budget import BudgetRegistry, EditBudget, EditScheduler, Priority
from tests.fakes.surface import run_until, settle


def test_scheduler_spaces_edits_and_serves_finals_first() -> None:
    sched = EditScheduler(30)  # one edit every 2 s
    for owner in ("a", "b", "c"):
        sched.request(owner, Priority.INTERIM)
    sched.request("final", Priority.FINAL)

    assert sched.due("final", 0.0) == 0.0
    assert sched.due("a", 0.0) is None
    sched.grant("final", 0.0)
    assert sched.due("a", 0.5) == 2.0
    sched.grant("a", 2.0)
    sched.request("a", Priority.INTERIM)  # a edits again: to the back of the queue
    assert [sched.head()] == ["b"]
    sched.grant("b", 4.0)
    assert sched.head() == "c"


def test_scheduler_holds_one_place_per_owner_and_promotion_keeps_it() -> None:
    sched = EditScheduler(None)
    sched.request("a", Priority.INTERIM)
    sched.request("b", Priority.INTERIM)
    sched.request("a", Priority.INTERIM)
    assert len(sched) == 2
    sched.request("b", Priority.FINAL)
    assert sched.head() == "b"
    assert sched.due("b", 7.0) == 7.0, "no cap: due at once"


def test_scheduler_pause_delays_everyone() -> None:
    sched = EditScheduler(60)
    sched.request("a", Priority.FINAL)
    sched.pause(10.0)
    assert sched.due("a", 1.0) == 10.0


def test_scheduler_burst_allows_a_few_edits_at_once() -> None:
    sched = EditScheduler(6, burst=3)  # 10 s apart, three at once
    times = []
    now = 0.0
    for _ in range(5):
        sched.request("a", Priority.INTERIM)
        due = sched.due("a", now)
        assert due is not None
        now = due
        sched.grant("a", now)
        times.append(now)
    assert times == [0.0, 0.0, 0.0, 10.0, 20.0]


def test_rejects_a_nonsense_rate() -> None:
    with pytest.raises(ValueError, match="positive"):
        EditScheduler(0)


async def test_waiting_streams_take_turns_in_order_and_finals_jump_the_queue() -> None:
    clock = ManualClock()
    budget = EditBudget(clock, 6)  # every 10 s
    granted: list[tuple[str, float]] = []

    async def edit(name: str, priority: Priority = Priority.INTERIM) -> None:
        await budget.acquire(name, priority)
        granted.append((name, clock.monotonic()))

    async with asyncio.TaskGroup() as tg:
        tg.create_task(edit("first"))
        await settle()
        for name in ("s1", "s2", "s3"):
            tg.create_task(edit(name))
        await settle()
        tg.create_task(edit("final", Priority.FINAL))
        await run_until(clock, lambda: len(granted) == 5, step=0.5)

    assert [name for name, _ in granted] == ["first", "final", "s1", "s2", "s3"]
    assert [t for _, t in granted] == [0.0, 10.0, 20.0, 30.0, 40.0]


async def test_promotion_moves_a_waiting_stream_ahead() -> None:
    clock = ManualClock()
    budget = EditBudget(clock, 6)
    order: list[str] = []

    async def edit(name: str) -> None:
        await budget.acquire(name, Priority.INTERIM)
        order.append(name)

    async with asyncio.TaskGroup() as tg:
        for name in ("a", "b", "c"):
            tg.create_task(edit(name))
        await settle()
        budget.promote("c")
        await run_until(clock, lambda: len(order) == 3, step=0.5)
    assert order == ["a", "c", "b"]


async def test_a_429_pauses_the_whole_key() -> None:
    clock = ManualClock()
    budget = EditBudget(clock, None)
    await budget.acquire("a")
    budget.note_rate_limited(5.0)
    waiter = asyncio.ensure_future(budget.acquire("b", Priority.FINAL))
    await run_until(clock, waiter.done, step=0.25)
    assert clock.monotonic() == pytest.approx(5.0)


async def test_a_cancelled_waiter_gives_up_its_place() -> None:
    clock = ManualClock()
    budget = EditBudget(clock, 6)
    await budget.acquire("a")
    gone = asyncio.ensure_future(budget.acquire("gone"))
    stays = asyncio.ensure_future(budget.acquire("stays"))
    await settle()
    gone.cancel()
    await run_until(clock, stays.done, step=0.5)
    assert gone.cancelled()
    assert len(budget.scheduler) == 0
    assert clock.monotonic() == pytest.approx(10.0)


async def test_one_owner_cannot_wait_twice() -> None:
    clock = ManualClock()
    budget = EditBudget(clock, 6)
    await budget.acquire("a")
    first = asyncio.ensure_future(budget.acquire("a"))
    await settle()
    with pytest.raises(RuntimeError, match="one edit at a time"):
        await budget.acquire("a")
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)


def test_registry_gives_one_budget_per_key() -> None:
    registry = BudgetRegistry(ManualClock())
    slack = SurfaceLimits(4000, 1.0, 50, "slack:T1")
    assert registry.get(slack) is registry.get(SurfaceLimits(4000, 1.0, 50, "slack:T1"))
    assert registry.get(slack) is not registry.get(SurfaceLimits(4000, 1.0, 50, "slack:T2"))


def test_a_final_may_use_the_edit_kept_in_hand_and_interim_edits_wait_for_it() -> None:
    sched = EditScheduler(30, reserve=1)  # one edit every 2 s, one kept for finals
    sched.request("a", Priority.INTERIM)
    sched.grant("a", 0.0)
    sched.request("b", Priority.INTERIM)
    assert sched.due("b", 0.5) == 2.0, "interim edits keep the pace"
    sched.cancel("b")
    sched.request("final", Priority.FINAL)
    assert sched.due("final", 0.5) == 0.5, "the final goes at once"
    sched.grant("final", 0.5)
    sched.request("b", Priority.INTERIM)
    assert sched.due("b", 0.6) == 4.0, "the reserve refills before interim edits go on"


def test_an_unforeseen_429_slows_the_pace_and_edits_that_go_through_recover_it() -> None:
    sched = EditScheduler(60)  # 1 s apart
    sched.pause(5.0, now=0.0)  # the pace said there was room: the platform allows less
    assert sched.interval == pytest.approx(1.25)
    assert sched.ready_at() == 5.0
    sched.grant("a", 5.0)
    sched.pause(5.5, now=5.1)  # foreseen (the pace had no room yet): no slower
    assert sched.interval == pytest.approx(1.25 * 0.97)
    for i in range(100):
        sched.grant("a", 10.0 + i * 2)
    assert sched.interval == pytest.approx(1.0), "never above the documented rate"


def test_the_wait_estimate_counts_the_finals_queued_ahead() -> None:
    sched = EditScheduler(60)
    sched.grant("x", 0.0)
    assert sched.wait_estimate(0.0) == pytest.approx(1.0)
    sched.request("a", Priority.FINAL)
    sched.request("b", Priority.FINAL)
    sched.request("c", Priority.INTERIM)
    assert sched.wait_estimate(0.0) == pytest.approx(3.0), "two finals first, then ours"


def test_a_window_allows_that_many_at_once_and_then_as_many_as_leave_it() -> None:
    sched = EditScheduler(60, window=4)  # 1 s apart: at most four in any 4 s
    times = []
    now = 0.0
    for _ in range(9):
        sched.request("a", Priority.INTERIM)
        due = sched.due("a", now)
        assert due is not None
        now = due
        sched.grant("a", now)
        times.append(now)
    assert times == [0.0, 0.0, 0.0, 0.0, 4.0, 4.0, 4.0, 4.0, 8.0]
    assert all(b - a >= 4.0 for a, b in zip(times, times[4:], strict=False))
