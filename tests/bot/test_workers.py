"""Two workers on one PostgreSQL database (two cores, each with its own pool, as two processes
would have), sharing the threads of one platform: a worker that dies mid-run is taken over as
soon as its connection ends, one that hangs once its lease expires; a click, a Stop or a message on the worker that does not hold the run reaches
it; a job due on both runs once; a write with a stale token is refused."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from bot.api.actions import StopRun, encode
from bot.api.inbound import Author, Inbound, ThreadKey
from bot.api.surface import Surface
from bot.config import Settings
from bot.core import Core
from bot.infra.clock import Clock, SystemClock
from bot.llm.messages import AssistantMessage, ToolResult, UserMessage
from bot.llm.model import ModelPiece, ModelRequest
from bot.scheduler.jobs import Job
from bot.sessions.model import RunState
from bot.storage.postgres.presence import register
from bot.storage.postgres.store import PostgresStore
from bot.thread.recovery import RESUMING
from bot.tools import ToolContext, ToolRegistry, tool
from tests.fakes.scripted_model import call, step, text
from tests.fakes.surface import RecordingSurface
from tests.postgres import fresh_schema, postgres_database

__all__ = ["postgres_database"]

KEY = ThreadKey("test:c1:t1")
ALICE = Author("test:alice", "Alice")
BOB = Author("test:bob", "Bob")
TTL_S = 2.0
WAIT_S = 30.0


class Model:
    """A model for one worker: ``hold`` keeps its next call waiting until ``release`` (at most
    ``WAIT_S``: a broken test fails instead of hanging); otherwise each call takes the next
    scripted step, then answers "Done."."""

    def __init__(self, *steps: list[ModelPiece]) -> None:
        self.steps = list(steps)
        self.requests: list[ModelRequest] = []
        self.held = asyncio.Event()
        self.release = asyncio.Event()
        self.hold = False
        self.label = "test model"
        self.name = "test"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        self.requests.append(request)
        if self.hold:
            self.hold = False
            self.held.set()
            async with asyncio.timeout(WAIT_S):
                await self.release.wait()
        pieces = self.steps.pop(0) if self.steps else text("Done.")
        for piece in pieces:
            yield piece

    async def aclose(self) -> None:
        return None


class Platform:
    """The threads both workers post in, as a platform keeps them."""

    def __init__(self) -> None:
        self.threads: dict[str, RecordingSurface] = {}

    def thread(self, key: str = KEY) -> RecordingSurface:
        if key not in self.threads:
            self.threads[key] = RecordingSurface(SystemClock(), thread_key=key)
        return self.threads[key]

    def text(self, key: str = KEY) -> str:
        return "\n".join(self.thread(key).texts())


class Cluster:
    def __init__(self, url: str, tmp_path: Path) -> None:
        self.url = url
        self.tmp_path = tmp_path
        self.platform = Platform()
        self.ran: list[str] = []
        self.cores: list[Core] = []

    async def worker(
        self, name: str, model: Model, clock: Clock | None = None, *, ttl_s: float = TTL_S
    ) -> Core:
        ran = self.ran

        @tool(side_effects=True)
        async def deploy(ctx: ToolContext, target: str) -> str:
            """Deploy the service.

            Args:
                target: Where to.
            """
            ran.append(target)
            return f"deployed to {target}"

        settings = Settings(
            data_dir=self.tmp_path / name,
            lease_ttl_s=ttl_s,
            worker_poll_s=0.1,
            worker_id=name,
            workspace_tools=False,
        )
        core = Core(
            settings,
            PostgresStore(self.url, pool_size=4),
            model,
            ToolRegistry([deploy]),
            clock or SystemClock(),
        )
        core.register_surfaces("test:", self.platform.thread)
        await core.start()
        self.cores.append(core)
        return core

    async def close(self) -> None:
        for core in self.cores:
            await core.aclose()

    async def sql(self, query: str, *args: Any) -> Any:
        conn = await asyncpg.connect(self.url)
        try:
            return await conn.fetch(query, *args)
        finally:
            await conn.close()


@pytest.fixture
async def cluster(postgres_database: str, tmp_path: Path) -> AsyncIterator[Cluster]:
    kept = Cluster(await fresh_schema(postgres_database), tmp_path)
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


async def kill(core: Core) -> None:
    """As a SIGKILL would leave it: the worker's connections cut, its work gone, nothing
    released or written on its way out."""
    core.store.pool.terminate()  # type: ignore[attr-defined]
    await core.work.aclose()
    for task in list(core.tasks._tasks):
        task.cancel()
    await asyncio.gather(*core.tasks._tasks, return_exceptions=True)


@asynccontextmanager
async def hung(url: str, name: str) -> AsyncIterator[None]:
    """Worker ``name`` seen as hung rather than dead: its presence held, as a process frozen with
    its connections open holds it, by a connection of the test's own."""
    conn = await asyncpg.connect(url)
    try:
        await register(conn, name)
        yield
    finally:
        await conn.close()


def say(words: str, event_id: str, author: Author = ALICE) -> Inbound:
    return Inbound(KEY, author, words, event_id)


async def test_a_worker_killed_mid_run_is_taken_over_within_the_lease_time(
    cluster: Cluster,
) -> None:
    held = Model()
    held.hold = True
    a = await cluster.worker("a", held)
    b = await cluster.worker("b", Model(text("Here is the whole answer.")))
    work = await a.admit(say("Summarise the incident", "e1"), cluster.platform.thread())
    async with asyncio.timeout(WAIT_S):
        await held.held.wait()
    assert [r["owner"] for r in await cluster.sql("SELECT owner FROM leases")] == ["a"]

    await kill(a)
    killed = time.monotonic()
    assert work is not None
    await until(lambda: "Here is the whole answer." in cluster.platform.text())
    took = time.monotonic() - killed
    # the lease expires, then the next poll takes it over (figures: bench/workers.py)
    assert took < TTL_S + 10.0, took
    await b.wait_idle()  # the answer shows before its run stores the session idle

    shown = cluster.platform.text()
    assert shown.count(RESUMING) == 1
    [row] = await cluster.sql("SELECT state FROM sessions")
    assert row["state"] == RunState.IDLE.value
    [lease] = await cluster.sql("SELECT owner FROM leases")
    assert lease["owner"] == ""  # b let it go when its run ended


async def lease_left(cluster: Cluster, owner: str) -> float:
    """Seconds left, on the database's clock, of the lease ``owner`` holds (one at most)."""
    [row] = await cluster.sql(
        "SELECT extract(epoch FROM expires_at - clock_timestamp())::float8 AS left_s"
        " FROM leases WHERE owner = $1",
        owner,
    )
    return float(row["left_s"])


LONG_TTL_S = 120.0
"""A lease that cannot expire within a test: a takeover before it is by the holder's presence."""


async def test_a_killed_worker_is_known_gone_by_its_connection_not_its_lease(
    cluster: Cluster,
) -> None:
    held = Model()
    held.hold = True
    a = await cluster.worker("a", held, ttl_s=LONG_TTL_S)
    b = await cluster.worker("b", Model(text("Here is the whole answer.")), ttl_s=LONG_TTL_S)
    await a.admit(say("Summarise the incident", "e1"), cluster.platform.thread())
    async with asyncio.timeout(WAIT_S):
        await held.held.wait()

    await kill(a)  # its connections end: the one holding its presence too
    killed = time.monotonic()
    await until(lambda: "Here is the whole answer." in cluster.platform.text())
    took = time.monotonic() - killed
    await b.wait_idle()
    # a's lease had two minutes left: b knew a was gone from its connection, at its next poll
    # (0.1 s here; the bound is for a loaded machine, the figures are in bench/cluster.py)
    assert took < 10.0, took
    assert cluster.platform.text().count(RESUMING) == 1
    assert cluster.platform.text().count("Here is the whole answer.") == 1
    [lease] = await cluster.sql("SELECT owner FROM leases")
    assert lease["owner"] == ""  # b let it go when its run ended


async def test_a_hung_worker_keeps_its_threads_until_its_lease_expires(cluster: Cluster) -> None:
    held = Model()
    held.hold = True
    a = await cluster.worker("a", held)
    b = await cluster.worker("b", Model(text("Here is the whole answer.")))
    await a.admit(say("Summarise the incident", "e1"), cluster.platform.thread())
    async with asyncio.timeout(WAIT_S):
        await held.held.wait()

    async with hung(cluster.url, "a"):  # its renewals stop, its presence stays
        await kill(a)
        killed = time.monotonic()
        left = await lease_left(cluster, "a")  # about two thirds of TTL_S or more (renewals)
        await until(lambda: "Here is the whole answer." in cluster.platform.text())
        took = time.monotonic() - killed
    await b.wait_idle()
    # b waited for the lease to expire on the database's clock (measured from the kill rather
    # than from the last renewal, whose lateness on a loaded machine shortens what was left)
    assert left > 0.0 and took >= left - 0.05, (left, took)
    assert cluster.platform.text().count(RESUMING) == 1


async def test_a_worker_whose_connection_alone_was_cut_finds_its_taken_threads_at_once(
    cluster: Cluster,
) -> None:
    held = Model(text("The stale answer."))
    held.hold = True
    a = await cluster.worker("a", held, ttl_s=LONG_TTL_S)
    work = await a.admit(say("Plan the week", "e1"), cluster.platform.thread())
    async with asyncio.timeout(WAIT_S):
        await held.held.wait()
    # while a looked gone, another worker took the thread over (a new token)...
    await cluster.sql("UPDATE leases SET owner = 'c', token = nextval('lease_tokens')")
    # ...and a's connection holding its presence ends (a proxy, pg_terminate_backend)
    await cluster.sql(
        "SELECT pg_terminate_backend(p.pid) FROM pg_locks p JOIN workers w ON w.owner = 'a'"
        " WHERE p.locktype = 'advisory' AND p.objsubid = 2 AND p.objid = w.lock::oid"
    )
    # a listens again, checks its leases at once (not in 40 s), and its run stops unwritten
    await until(lambda: KEY not in a.supervisor.active, within=10.0)
    assert work is not None
    async with asyncio.timeout(WAIT_S):
        await work
    [present] = await cluster.sql("SELECT count(*) AS n FROM gone_workers")
    assert present["n"] == 0  # a is registered again, on a new connection
    session = await a.store.load_session(KEY, time.time())
    assert not any(isinstance(m, AssistantMessage) for m in session.messages)
    assert "The stale answer." not in cluster.platform.text()


async def test_a_worker_taken_for_gone_while_it_lives_registers_again(cluster: Cluster) -> None:
    a = await cluster.worker("a", Model())
    # a's lock lost on the way while its connection seems fine (a pooler recycled it)
    await cluster.sql("UPDATE workers SET lock = lock + 1000000 WHERE owner = 'a'")
    assert not await a.store.is_present("a")  # type: ignore[attr-defined]
    for _ in range(1000):  # a's next look finds it and registers again
        if await a.store.is_present("a"):  # type: ignore[attr-defined]
            break
        await asyncio.sleep(0.01)
    assert await a.store.is_present("a")  # type: ignore[attr-defined]
    [gone] = await cluster.sql("SELECT count(*) AS n FROM gone_workers")
    assert gone["n"] == 0


async def test_a_click_on_the_worker_not_holding_the_run_resumes_it_there(cluster: Cluster) -> None:
    a = await cluster.worker("a", Model(step(call("deploy", {"target": "prod"}))))
    b = await cluster.worker("b", Model(text("Deployed, as approved.")))
    surface = cluster.platform.thread()
    await a.handle(say("deploy to prod", "e1"), surface)
    [card] = [m for m in surface.live() if any(x.label == "Approve" for x in m.buttons)]
    approve = next(x for x in card.buttons if x.label == "Approve")

    note = await b.on_action(approve.action_id, ALICE, surface, card.id)
    assert note == "Approved."
    await until(lambda: "Deployed, as approved." in cluster.platform.text())
    await b.wait_idle()
    assert cluster.ran == ["prod"]
    session = await b.store.load_session(KEY, time.time())
    assert [type(m) for m in session.messages] == [
        UserMessage,
        AssistantMessage,
        ToolResult,
        AssistantMessage,
    ]
    assert session.state is RunState.IDLE


async def test_a_stop_and_a_message_on_the_other_worker_reach_the_run(cluster: Cluster) -> None:
    held = Model()
    held.hold = True
    a = await cluster.worker("a", held)
    b = await cluster.worker("b", Model())
    surface = cluster.platform.thread()
    work = await a.admit(say("Write the report", "e1"), surface)
    async with asyncio.timeout(WAIT_S):
        await held.held.wait()

    await b.admit(
        say("and add the numbers", "e2", BOB), surface
    )  # b cannot take the thread: a has it
    await until(lambda: a.supervisor.active[KEY].session.inbox != [])
    assert [m.text for m in a.supervisor.active[KEY].session.inbox] == ["and add the numbers"]

    stop = encode(StopRun(a.supervisor.active[KEY].run_id))  # the run's Stop button
    assert await b.on_action(stop, BOB, surface, None) is None
    assert work is not None
    async with asyncio.timeout(WAIT_S):
        await work
    assert "Stopped by Bob." in cluster.platform.text()
    await a.wait_idle()
    session = await a.store.load_session(KEY, time.time())
    assert "and add the numbers" in [m.text for m in session.messages if isinstance(m, UserMessage)]


async def test_a_delivery_is_answered_once_across_workers(cluster: Cluster) -> None:
    a = await cluster.worker("a", Model(text("Once.")))
    b = await cluster.worker("b", Model(text("Twice?")))
    surface = cluster.platform.thread()
    await asyncio.gather(
        a.handle(say("hello", "same-event"), surface), b.handle(say("hello", "same-event"), surface)
    )
    await a.wait_idle()
    await b.wait_idle()
    session = await a.store.load_session(KEY, time.time())
    assert [m.text for m in session.messages if isinstance(m, UserMessage)] == ["hello"]
    assert cluster.platform.text().count("Once.") + cluster.platform.text().count("Twice?") == 1


async def test_a_job_due_on_two_workers_runs_once(cluster: Cluster) -> None:
    a = await cluster.worker("a", Model())
    b = await cluster.worker("b", Model())
    runs: list[tuple[str, str]] = []
    for name, core in (("a", a), ("b", b)):

        async def count(job: Job, name: str = name) -> None:
            runs.append((name, job.id))
            await asyncio.sleep(0)

        core.scheduler.handle("count", count)
    now = time.time()
    for n in range(40):
        await a.store.put_job(Job(f"job-{n}", "count", now - 1))
    ran = await asyncio.gather(*(core.scheduler.run_due() for core in (a, b, a, b)))
    assert sorted(job for _, job in runs) == sorted(f"job-{n}" for n in range(40))
    assert sum(ran) == 40
    assert not [j for j in await a.store.due_jobs(now + 1000) if j.kind == "count"]


async def test_a_scheduled_run_claimed_by_a_worker_killed_before_its_turn_is_answered_by_another(
    cluster: Cluster,
) -> None:
    a = await cluster.worker("a", Model())
    b = await cluster.worker("b", Model(text("The build is green.")))
    schedule = await a.schedules.create(KEY, ALICE, "Say whether the build is green", "in 1 second")
    reached = asyncio.Event()

    async def killed(*_: object) -> None:  # a dies once the run is claimed, before its turn begins
        reached.set()

    a.schedules._answer = killed  # type: ignore[assignment]
    await until(lambda: time.time() >= schedule.next_at)
    assert await a.scheduler.run_due() >= 1 and reached.is_set()
    await kill(a)
    await until(lambda: "The build is green." in cluster.platform.text())
    await b.wait_idle()
    session = await b.store.load_session(KEY, time.time())
    asked = [m for m in session.messages if isinstance(m, UserMessage)]
    assert [(m.text, m.author_name) for m in asked] == [
        ("Say whether the build is green", "scheduled by Alice")
    ]
    assert "⏰ Scheduled by Alice: Say whether the build is green" in cluster.platform.text()
    assert await b.store.schedules_of(KEY) == [] and await b.store.arrivals() == []


async def test_a_write_with_a_stale_token_is_refused_and_the_stale_run_stops(
    cluster: Cluster,
) -> None:
    held = Model(text("The stale answer."))
    held.hold = True
    a = await cluster.worker("a", held)
    surface = cluster.platform.thread()
    work = await a.admit(say("Plan the week", "e1"), surface)
    async with asyncio.timeout(WAIT_S):
        await held.held.wait()
    # a is paused for longer than its lease (its renewals stop), and another worker takes over
    renewing = [t for t in asyncio.all_tasks() if "_renew" in repr(t.get_coro())]
    for task in renewing:
        task.cancel()
    await cluster.sql("UPDATE leases SET expires_at = clock_timestamp() - interval '1 second'")
    other = PostgresStore(cluster.url, pool_size=1)
    await other.open()
    try:
        taken = await other.take_lease(KEY, "c", 60.0)
        assert taken is not None
        held.release.set()
        assert work is not None
        async with asyncio.timeout(WAIT_S):
            await work  # ends cleanly: its write is refused, nothing raised
        session = await other.load_session(KEY, time.time())
        assert [m.text for m in session.messages if isinstance(m, UserMessage)] == ["Plan the week"]
        assert not any(isinstance(m, AssistantMessage) for m in session.messages)
        assert KEY not in a.supervisor.active and KEY not in a.leases.held  # type: ignore[attr-defined]
    finally:
        await other.close()


async def delegation_waiting_on(
    cluster: Cluster,
) -> tuple[asyncio.Future[None], Core, RecordingSurface, str, str]:
    """Worker ``a`` runs a delegation whose deploy waits inline for approval; worker ``b`` is
    the other. The run, ``b``, the thread, the card's Approve action and the card."""
    a = await cluster.worker(
        "a",
        Model(
            step(call("delegate_task", {"task": "Ship it to prod.", "tools": ["deploy"]})),
            step(call("deploy", {"target": "prod"})),
            text("Shipped to prod."),
            text("The sub-agent shipped it."),
        ),
    )
    b = await cluster.worker("b", Model())
    surface = cluster.platform.thread()
    running = asyncio.ensure_future(a.handle(say("ship it", "e1"), surface))
    await until(lambda: any(x.label == "Approve" for m in surface.live() for x in m.buttons))
    [card] = [m for m in surface.live() if any(x.label == "Approve" for x in m.buttons)]
    approve = next(x for x in card.buttons if x.label == "Approve")
    return running, b, surface, approve.action_id, card.id


async def test_a_click_elsewhere_reaches_a_delegation_waiting_inline_at_once(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.approvals import inline as gate

    monkeypatch.setattr(gate, "POLL_S", 600.0)  # only the nudge can wake the waiting call in time
    running, b, surface, approve, card_id = await delegation_waiting_on(cluster)
    resumed: list[ThreadKey] = []
    resume = b.decisions.resume

    async def resuming(key: ThreadKey, surface: Surface) -> None:
        resumed.append(key)
        await resume(key, surface)

    b.decisions.resume = resuming  # type: ignore[method-assign]
    assert await b.on_action(approve, ALICE, surface, card_id) == "Approved."
    async with asyncio.timeout(10):
        await running
    assert cluster.ran == ["prod"]
    assert resumed == []  # nothing paused to resume on b: the call on a went on by itself
    assert "The sub-agent shipped it." in cluster.platform.text()
    session = await b.store.load_session(KEY, time.time())
    assert session.state is RunState.IDLE


async def test_a_nudge_that_fails_leaves_the_decision_to_the_waiting_call_s_own_reread(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from bot.approvals import inline as gate

    monkeypatch.setattr(gate, "POLL_S", 0.2)
    running, b, surface, approve, card_id = await delegation_waiting_on(cluster)

    async def unreachable(key: ThreadKey) -> None:
        raise ConnectionError("the database went away")

    b.decisions.nudge = unreachable
    assert await b.on_action(approve, ALICE, surface, card_id) == "Approved."
    async with asyncio.timeout(10):
        await running
    assert cluster.ran == ["prod"]
    assert "could not tell the worker holding" in caplog.text
