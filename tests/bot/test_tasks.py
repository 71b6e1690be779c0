"""Owned tasks: kept until they end, failures logged, drained with a grace period."""

from __future__ import annotations

import asyncio
import logging

import pytest

from bot.infra.tasks import TaskSet

WAIT = 5.0


async def test_idle_waits_for_tasks_started_meanwhile() -> None:
    tasks = TaskSet("test")
    done: list[str] = []
    gate = asyncio.Event()

    async def second() -> None:
        done.append("second")

    async def first() -> None:
        await gate.wait()
        tasks.spawn(second())
        done.append("first")

    tasks.spawn(first())
    assert len(tasks) == 1
    gate.set()
    await asyncio.wait_for(tasks.idle(), WAIT)
    assert done == ["first", "second"] and len(tasks) == 0


async def test_a_failure_is_logged_unless_someone_awaits_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tasks = TaskSet("the owner")

    async def boom() -> None:
        raise RuntimeError("boom")

    with caplog.at_level(logging.ERROR, logger="bot.infra.tasks"):
        tasks.spawn(boom())
        awaited = tasks.spawn(boom(), awaited=True)
        await asyncio.wait_for(tasks.idle(), WAIT)
    assert [r.getMessage() for r in caplog.records] == ["background work of the owner failed"]
    assert awaited is not None
    with pytest.raises(RuntimeError):
        await awaited


async def test_drain_lets_quick_work_finish_cancels_the_rest_and_refuses_more() -> None:
    tasks = TaskSet("test")
    quick_done = asyncio.Event()
    forever = asyncio.Event()

    async def quick() -> None:
        quick_done.set()

    async def stuck() -> None:
        await forever.wait()

    tasks.spawn(quick())
    hung = tasks.spawn(stuck())
    await asyncio.wait_for(tasks.drain(grace=0.05), WAIT)
    assert quick_done.is_set() and hung is not None and hung.cancelled()
    ran: list[int] = []

    async def late() -> None:
        ran.append(1)

    assert tasks.spawn(late()) is None and ran == [] and len(tasks) == 0
