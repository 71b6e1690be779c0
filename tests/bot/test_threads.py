"""Per-thread order: one holder per key at a time, first come first served, places kept."""

from __future__ import annotations

import asyncio

from bot.thread.line import ThreadLocks

WAIT = 5.0


async def test_holders_of_one_key_take_turns_in_the_order_they_reserved() -> None:
    locks: ThreadLocks[str] = ThreadLocks()
    order: list[int] = []
    turns = [locks.reserve("k") for _ in range(5)]

    async def work(n: int) -> None:
        async with turns[n]:
            order.append(n)
            await asyncio.sleep(0)
            order.append(n)

    await asyncio.wait_for(asyncio.gather(*(work(n) for n in reversed(range(5)))), WAIT)
    assert order == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert len(locks) == 0 and not locks.busy("k")


async def test_other_keys_do_not_wait() -> None:
    locks: ThreadLocks[str] = ThreadLocks()
    async with locks.hold("a"):
        await asyncio.wait_for(_enter(locks, "b"), WAIT)
        assert locks.busy("a")


async def _enter(locks: ThreadLocks[str], key: str) -> None:
    async with locks.hold(key):
        pass


async def test_a_place_given_up_or_cancelled_lets_the_next_one_in() -> None:
    locks: ThreadLocks[str] = ThreadLocks()
    first = locks.reserve("k")
    given_up = locks.reserve("k")
    waiting = asyncio.create_task(_hold(locks.reserve("k")))
    last = locks.reserve("k")
    given_up.cancel()
    await asyncio.sleep(0)
    waiting.cancel()
    async with first:
        pass
    await asyncio.gather(waiting, return_exceptions=True)
    await asyncio.wait_for(_hold(last), WAIT)
    assert len(locks) == 0


async def _hold(turn: object) -> None:
    async with turn:  # type: ignore[attr-defined]
        pass
