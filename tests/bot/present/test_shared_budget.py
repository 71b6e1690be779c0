"""Edit budgets shared by workers through the real PostgreSQL (a fresh schema per test): two
stores in one process, each a worker with its own :class:`BudgetRegistry`, pace their edits of
one key together; a 429 one of them sees pauses the other; a worker that loses the database
paces alone at a fraction of the rate.

The pace lives on the database's clock, which a fake clock cannot move: the tests that measure
it use real time with a short interval (tenths of a second), and count edits in windows rather
than timing single gaps. The one about losing the database uses the fake clock.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace

import asyncpg
import pytest

from bot.api.surface import SurfaceLimits
from bot.cluster.shared_rate import MIN_WORKERS, SharedRates
from bot.infra.clock import Clock, ManualClock, SystemClock
from bot.present.budget import BudgetRegistry, EditBudget, Priority
from bot.present.native import NativeReply
from bot.present.reply import ReplyStream
from bot.storage.postgres.store import PostgresStore
from tests.bot.present.test_native import LIMITS as STREAM_LIMITS
from tests.bot.present.test_native import Streams
from tests.fakes.surface import RecordingSurface
from tests.postgres import fresh_schema, postgres_database

__all__ = ["postgres_database"]

LIMITS = SurfaceLimits(
    max_chars=4000, min_edit_interval=0.0, edits_per_minute=600.0, budget_key="slack:TSHARED"
)
"""Ten edits a second for the workspace."""
INTERVAL = 0.1
WAIT_S = 10.0


class Workers:
    """Worker stores on one schema, each with its budgets; closed at the end."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.stores: list[PostgresStore] = []
        self.registries: list[BudgetRegistry] = []

    async def worker(self, name: str, clock: Clock) -> BudgetRegistry:
        store = PostgresStore(self.url)
        await store.open()
        self.stores.append(store)
        registry = BudgetRegistry(clock, shared=SharedRates(store, name, clock))
        self.registries.append(registry)
        return registry

    async def close(self) -> None:
        for registry in self.registries:
            await registry.aclose()
        for store in self.stores:
            await store.close()


@pytest.fixture
async def workers(postgres_database: str) -> AsyncIterator[Workers]:
    kept = Workers(await fresh_schema(postgres_database))
    yield kept
    await kept.close()


async def until(check: Callable[[], bool], within: float = WAIT_S) -> None:
    """Poll ``check`` every 10 ms until it holds; TimeoutError after ``within`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():
        if loop.time() > deadline:
            raise TimeoutError(f"not true within {within} s")
        await asyncio.sleep(0.01)


async def edit_often(budget: EditBudget, owners: int, edits: int, grants: list[float]) -> None:
    """``owners`` streams each making ``edits`` edits (the last one final), as replies do."""

    async def stream(owner: object) -> None:
        for n in range(edits):
            priority = Priority.FINAL if n == edits - 1 else Priority.INTERIM
            assert await budget.acquire(owner, priority)
            grants.append(time.monotonic())

    async with asyncio.timeout(WAIT_S * 3):
        await asyncio.gather(*(stream(object()) for _ in range(owners)))


def most_in_a_window(times: list[float], window: float) -> int:
    ordered = sorted(times)
    return max(sum(1 for t in ordered[i:] if t < start + window) for i, start in enumerate(ordered))


async def test_two_workers_share_one_rate(workers: Workers) -> None:
    clock = SystemClock()
    first, second = await workers.worker("w1", clock), await workers.worker("w2", clock)
    grants: dict[str, list[float]] = {"w1": [], "w2": []}
    began = time.monotonic()
    await asyncio.gather(
        edit_often(first.get(LIMITS), 3, 5, grants["w1"]),
        edit_often(second.get(LIMITS), 3, 5, grants["w2"]),
    )
    both = grants["w1"] + grants["w2"]
    assert len(both) == 30
    for registry in (first, second):  # paced by the database all along, not each on its own
        assert registry.shared is not None
        assert registry.shared._paces[LIMITS.budget_key].workers == 2
        assert not registry.shared._paces[LIMITS.budget_key].offline
    # 30 edits at 10 a second take about 3 s (each worker alone would allow 10 a second: 1.5 s)
    assert max(both) - began >= (30 - 2) * INTERVAL
    # in any second at most its 10 edits, the first with the one of the reserve for a final
    assert most_in_a_window(both, 1.0) <= 1.0 / INTERVAL + 2
    assert min(len(grants["w1"]), len(grants["w2"])) == 15  # neither worker is starved


async def test_a_429_on_one_worker_pauses_the_other(workers: Workers) -> None:
    clock = SystemClock()
    first, second = await workers.worker("w1", clock), await workers.worker("w2", clock)
    one, other = first.get(LIMITS), second.get(LIMITS)
    assert await one.acquire("a") and await other.acquire("b")  # both hear pauses from now on
    other_pace = second.shared._paces[LIMITS.budget_key] if second.shared else None
    assert other_pace is not None and not other_pace.paused

    hit = time.monotonic()
    one.note_rate_limited(1.0)
    await until(lambda: other_pace.paused)  # heard through the database, not guessed
    assert await other.acquire("b", Priority.FINAL)
    assert time.monotonic() - hit >= 1.0 - 0.05  # the other worker's next edit waited it out


async def test_a_429_the_pace_did_not_foresee_slows_the_pace_of_every_worker(
    workers: Workers,
) -> None:
    clock = SystemClock()
    first = await workers.worker("w1", clock)
    await workers.worker("w2", clock)
    one = first.get(LIMITS)
    assert await one.acquire("a") and first.shared is not None
    store = workers.stores[1]

    async def stretch() -> float:
        await asyncio.gather(*first.shared._tasks)  # type: ignore[union-attr]  # the 429s told
        return float(
            await store.pool.fetchval(
                "SELECT stretch FROM edit_budgets WHERE key = $1", LIMITS.budget_key
            )
        )

    one.note_rate_limited(0.0)  # the pace said there was room: it allows less than we thought
    assert await stretch() == pytest.approx(1.25)
    got = await store.take_slots(
        LIMITS.budget_key, "w2", interval_s=INTERVAL, room=0.0, wanted=3, horizon_s=10.0, must=True
    )
    gaps = [b - a for a, b in zip(got.delays, got.delays[1:], strict=False)]
    assert gaps == pytest.approx([INTERVAL * 1.25] * 2, abs=0.01)  # the other worker slows down too
    assert await stretch() == pytest.approx(1.25 * 0.97**3)  # and each slot given recovers a little

    one.note_rate_limited(0.5)  # unforeseen again: slower still
    one.note_rate_limited(0.5)  # a second edit of the same burst, the key paused by then: foreseen
    assert await stretch() == pytest.approx(1.25 * 0.97**3 * 1.25)
    pace = first.shared._paces[LIMITS.budget_key]
    await until(lambda: not pace.paused)
    for _ in range(30):
        one.note_rate_limited(0.0)  # however many, never more than 4 times slower
    assert await stretch() == pytest.approx(4.0)


async def test_a_pause_is_kept_with_the_pace_for_a_worker_that_did_not_hear_it(
    workers: Workers,
) -> None:
    clock = SystemClock()
    first = await workers.worker("w1", clock)
    assert await first.get(LIMITS).acquire("a")
    hit = time.monotonic()
    first.get(LIMITS).note_rate_limited(1.5)
    assert first.shared is not None
    await first.shared.aclose()  # the pause is written
    late = await workers.worker("w2", clock)  # started after the 429: it heard nothing
    assert await late.get(LIMITS).acquire("b", Priority.FINAL)
    # the pause waited out, measured from the 429 (the late worker's start takes a while on a
    # loaded machine; without the kept pause its edit would go at once)
    assert time.monotonic() - hit >= 1.5 - 0.05


async def test_a_worker_that_loses_the_database_paces_at_a_fraction_of_the_rate(
    workers: Workers,
) -> None:
    clock = ManualClock()
    limits = replace(LIMITS, edits_per_minute=60.0)  # one a second
    first, second = await workers.worker("w1", clock), await workers.worker("w2", clock)
    assert await first.get(limits).acquire("a")
    waiting = asyncio.ensure_future(second.get(limits).acquire("b"))
    await until(lambda: clock.sleepers == 1 or waiting.done())  # its slot is a second later
    await clock.advance(1.0)
    assert await asyncio.wait_for(waiting, WAIT_S)

    await workers.stores[1].close()  # the second worker loses the database
    budget = second.get(limits)
    grants: list[float] = []

    async def edits() -> None:
        for _ in range(4):
            assert await budget.acquire("b")
            grants.append(clock.monotonic())

    editing = asyncio.ensure_future(edits())
    for _ in range(20):
        await clock.advance(0.5)
        if editing.done():
            break
    await asyncio.wait_for(editing, WAIT_S)
    assert second.shared is not None and second.shared._paces[limits.budget_key].offline
    gaps = [b - a for a, b in zip(grants, grants[1:], strict=False)]
    assert gaps and min(gaps) >= MIN_WORKERS * 1.0  # half the rate: it saw two workers


async def test_without_a_shared_store_a_budget_keeps_its_own_pace() -> None:
    clock = ManualClock()
    registry = BudgetRegistry(clock)
    budget = registry.get(replace(LIMITS, edits_per_minute=60.0))
    assert await budget.acquire("a")
    waiting = asyncio.ensure_future(budget.acquire("b"))
    await until(lambda: clock.sleepers == 1)
    await clock.advance(0.99)
    assert not waiting.done()
    await clock.advance(0.01)
    assert await asyncio.wait_for(waiting, WAIT_S)


async def test_a_malformed_pause_notice_is_ignored_and_the_next_one_heard(
    workers: Workers, caplog: pytest.LogCaptureFixture
) -> None:
    clock = SystemClock()
    registry = await workers.worker("w1", clock)
    assert await registry.get(LIMITS).acquire("a")  # listening from now on
    assert registry.shared is not None
    pace = registry.shared._paces[LIMITS.budget_key]
    conn = await asyncpg.connect(workers.url)
    try:
        await conn.execute("SELECT pg_notify('threadline_budget', 'soon slack:TSHARED')")
        await until(lambda: "malformed budget pause" in caplog.text)
        assert not pace.paused
        await conn.execute("SELECT pg_notify('threadline_budget', '5 slack:TOTHER')")  # not ours
        await conn.execute("SELECT pg_notify('threadline_budget', '5 slack:TSHARED')")
        await until(lambda: pace.paused)
    finally:
        await conn.close()


async def test_streams_that_cannot_start_at_once_never_wait_for_the_other_workers_pace(
    workers: Workers,
) -> None:
    """Two workers with four replies each, in a workspace where four streams may start at once
    and one every 10 s after: the four that get a start stream, the others are edited from the
    start — no reply waits for a later slot of the shared start pace (10 s away: far beyond
    what a loaded machine adds to showing the first words)."""
    clock = SystemClock()
    limits = replace(STREAM_LIMITS, budget_key="slack:TQUIET", starts_per_minute=6.0)
    replies: list[tuple[RecordingSurface, Streams, NativeReply]] = []
    for name in ("w1", "w2"):
        budgets = await workers.worker(name, clock)
        for n in range(4):
            surface = RecordingSurface(clock, thread_key=f"test:{name}:{n}")
            streams = Streams(surface, limits)
            edits = ReplyStream(surface, clock, budgets.get(surface.limits))
            replies.append((surface, streams, NativeReply(surface, streams, clock, budgets, edits)))
    began = time.monotonic()
    for _, _, reply in replies:
        reply.append("first words")
    await until(lambda: all(surface.texts() for surface, _, _ in replies), within=30.0)
    shown_after = time.monotonic() - began
    async with asyncio.timeout(30.0):
        await asyncio.gather(*(reply.finish() for _, _, reply in replies))
    try:
        assert shown_after < 5.0, f"the first words waited {shown_after:.1f} s for a start"
        assert sum(op == "start" for _, s, _ in replies for op, _ in s.calls) == 4
        assert all(surface.texts() == ["first words"] for surface, _, _ in replies)
    finally:
        for _, _, reply in replies:
            await reply.aclose()


POSTS = SurfaceLimits(
    max_chars=4000,
    min_edit_interval=0.0,
    edits_per_minute=600.0,
    budget_key="slack:TSHARED",
    posts_per_minute=120.0,
    post_window=4,
    post_key="slack:TSHARED:CPOSTS",
)
"""Two posts a second in one channel, at most four in any two seconds (as Slack counts them)."""
POST_INTERVAL = 0.5


async def test_two_workers_posting_in_one_channel_keep_its_window_together(
    workers: Workers,
) -> None:
    """The burst one worker alone has (four posts at once after a quiet spell) the two workers
    have together, and then the steady window: never more than four in any four intervals."""
    clock = SystemClock()
    first, second = await workers.worker("w1", clock), await workers.worker("w2", clock)
    grants: dict[str, list[float]] = {"w1": [], "w2": []}
    began = time.monotonic()
    posts_of = (first.posts(POSTS), second.posts(POSTS))
    assert posts_of[0] is not None and posts_of[1] is not None
    await asyncio.gather(
        edit_often(posts_of[0], 3, 2, grants["w1"]),
        edit_often(posts_of[1], 3, 2, grants["w2"]),
    )
    both = sorted(grants["w1"] + grants["w2"])
    assert len(both) == 12 and min(len(grants["w1"]), len(grants["w2"])) >= 4
    for registry in (first, second):  # paced by the database all along, not each on its own
        assert registry.shared is not None
        pace = registry.shared._paces[POSTS.post_key or ""]
        assert pace.workers == 2 and not pace.offline
    # four at once, as one worker alone posts after a quiet spell (not two, then one a second)
    assert both[3] - began < POST_INTERVAL, [round(t - began, 2) for t in both]
    # never more than four in any four intervals (less one for the timers' lateness on a busy machine)
    assert most_in_a_window(both, 3 * POST_INTERVAL) <= 4, [round(t - began, 2) for t in both]
    # and no slower than the window: twelve posts are three windows, the last at eight intervals
    assert 7.5 * POST_INTERVAL <= both[-1] - began < 10 * POST_INTERVAL
