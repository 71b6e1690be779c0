"""Several workers on one PostgreSQL database: what sharing the work costs and how fast it moves.

1. Takeover: a worker dies mid-run (its connections cut, nothing released: as a SIGKILL leaves
   it); the time until the thread's run resumes on the other worker (its model is asked again).
   With the default lease (10 s, renewed every 3.3 s) and poll (1 s).
2. Click on another worker: a run paused for approval on worker A; the click arrives at worker
   B; the time from the click until the run's next model request (on B).
3. Throughput: T threads answered at once (a model that answers at once, a surface that does
   nothing, so the bot is CPU-bound), shared among 1, 2 and 4 worker processes: threads per
   second, and CPU seconds of the workers per answered thread (the cost of coordination).

The database is made for the run on the server at ``--postgres`` and dropped at the end.

    python bench/workers.py [--takeovers 5] [--clicks 20] [--threads 800] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.clock import SystemClock
from bot.config import Settings
from bot.conversation import Author, Inbound, ThreadKey
from bot.core import Core
from bot.llm.model import ModelPiece, ModelRequest
from bot.storage.postgres import PostgresStore
from bot.tools import ToolContext, ToolRegistry, tool
from tests.fakes.scripted_model import call, step, text
from tests.fakes.surface import RecordingSurface

ALICE = Author("bench:alice", "Alice")


class Model:
    """Answers at once; ``hold`` keeps the next call waiting (as a slow model would) until the
    worker dies; ``asked`` is set on each call."""

    name = "bench"
    label = "bench model"

    def __init__(self, *, tool_first: bool = False) -> None:
        self.hold = False
        self.asked = asyncio.Event()
        self.tool_first = tool_first

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        self.asked.set()
        if self.hold:
            await asyncio.Event().wait()
        first = self.tool_first and len(request.messages) == 1
        for piece in step(call("deploy", {"target": "prod"})) if first else text("Done."):
            yield piece

    async def aclose(self) -> None:
        return None


@tool(side_effects=True)
async def deploy(ctx: ToolContext, target: str) -> str:
    """Deploy the service.

    Args:
        target: Where to.
    """
    return f"deployed to {target}"


class Threads:
    def __init__(self) -> None:
        self.surfaces: dict[str, RecordingSurface] = {}

    def __call__(self, key: str) -> RecordingSurface:
        if key not in self.surfaces:
            self.surfaces[key] = RecordingSurface(SystemClock(), thread_key=key)
        return self.surfaces[key]


async def worker(url: str, name: str, model: Model, threads: Threads, **settings: Any) -> Core:
    data = Path(tempfile.mkdtemp(prefix="threadline-bench-"))
    config = Settings(data_dir=data, worker_id=name, workspace_tools=False, **settings)
    core = Core(config, PostgresStore(url), model, ToolRegistry([deploy]), SystemClock())
    core.register_surfaces("bench:", threads)
    await core.start()
    return core


async def kill(core: Core) -> None:
    core.store.pool.terminate()  # type: ignore[attr-defined]
    await core.work.aclose()
    for task in list(core.tasks._tasks):
        task.cancel()
    await asyncio.gather(*core.tasks._tasks, return_exceptions=True)


async def takeover(url: str, n: int) -> float:
    threads = Threads()
    dying, taking = Model(), Model()
    dying.hold = True
    a = await worker(url, f"a{n}", dying, threads)
    b = await worker(url, f"b{n}", taking, threads)
    key = ThreadKey(f"bench:takeover:{n}")
    await a.admit(Inbound(key, ALICE, "Summarise the incident", f"t{n}"), threads(key))
    await asyncio.wait_for(dying.asked.wait(), 30)
    await kill(a)
    killed = time.perf_counter()
    await asyncio.wait_for(taking.asked.wait(), 60)
    took = time.perf_counter() - killed
    await b.wait_idle()
    await b.aclose()
    return took


async def clicks(url: str, count: int) -> list[float]:
    threads = Threads()
    a = await worker(url, "click-a", Model(tool_first=True), threads)
    resuming = Model()
    b = await worker(url, "click-b", resuming, threads)
    took: list[float] = []
    for n in range(count):
        key = ThreadKey(f"bench:click:{n}")
        surface = threads(key)
        await a.handle(Inbound(key, ALICE, "deploy to prod", f"c{n}"), surface)
        card = next(m for m in surface.live() if any(x.label == "Approve" for x in m.buttons))
        approve = next(x for x in card.buttons if x.label == "Approve")
        resuming.asked.clear()
        start = time.perf_counter()
        await b.on_action(approve.action_id, ALICE, surface, card.id)
        await asyncio.wait_for(resuming.asked.wait(), 30)
        took.append(time.perf_counter() - start)
        await b.wait_idle()
    await a.aclose()
    await b.aclose()
    return took


async def answer(core: Core, inbounds: list[Inbound]) -> None:
    """Answer ``inbounds`` at once, each in its thread."""
    surfaces = [core.surfaces.surface_for(i.thread_key) for i in inbounds]
    await asyncio.gather(*(core.handle(i, s) for i, s in zip(inbounds, surfaces, strict=True) if s is not None))


def _serve(url: str, name: str, keys: list[str], start_at: float, out: Any) -> None:
    async def main() -> None:
        core = await worker(url, name, Model(), Threads())
        inbounds = [Inbound(ThreadKey(k), ALICE, "hello there", f"{k}:1") for k in keys]
        # warm: the pool's connections open and prepare their statements before the clock starts,
        # so the figures are the steady cost of a thread, not each worker's start-up
        warm = [Inbound(ThreadKey(f"bench:warm:{name}:{n}"), ALICE, "hello", f"bench:warm:{name}:{n}") for n in range(40)]
        await answer(core, warm)
        await asyncio.sleep(max(0.0, start_at - time.time()))
        cpu0, wall0 = time.process_time(), time.perf_counter()
        await answer(core, inbounds)
        out.put((name, time.perf_counter() - wall0, time.process_time() - cpu0, len(keys)))
        await core.aclose()

    asyncio.run(main())


def throughput(url: str, workers: int, threads: int, run: int) -> tuple[float, float]:
    """Threads per second and CPU seconds per answered thread with ``workers`` processes."""
    keys = [f"bench:load:{run}:{n}" for n in range(threads)]
    out: multiprocessing.Queue[Any] = multiprocessing.Queue()
    start_at = time.time() + 5.0  # every worker started, connected and warm
    procs = [
        multiprocessing.Process(
            target=_serve, args=(url, f"w{run}-{i}", keys[i::workers], start_at, out)
        )
        for i in range(workers)
    ]
    for p in procs:
        p.start()
    results = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join()
    wall = max(r[1] for r in results)
    cpu = sum(r[2] for r in results)
    return threads / wall, cpu / threads


async def _admin(admin: str, sql: str) -> None:
    conn = await asyncpg.connect(admin)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--postgres",
        default=os.environ.get(
            "THREADLINE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument("--takeovers", type=int, default=5)
    parser.add_argument("--clicks", type=int, default=20)
    parser.add_argument("--threads", type=int, default=800)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    name = f"threadline_bench_{secrets.token_hex(4)}"
    asyncio.run(_admin(args.postgres, f'CREATE DATABASE "{name}"'))
    url = args.postgres.rsplit("/", 1)[0] + f"/{name}"
    try:
        times = [asyncio.run(takeover(url, n)) for n in range(args.takeovers)]
        q = statistics.quantiles(times, n=20, method="inclusive") if len(times) > 1 else times * 19
        print(
            f"takeover (kill -> run resumes on the other worker), {len(times)} kills: "
            f"p50 {statistics.median(times):.2f} s, p95 {q[18]:.2f} s, max {max(times):.2f} s"
        )
        took = asyncio.run(clicks(url, args.clicks))
        print(
            f"click on the other worker -> run resumes, {len(took)} clicks: "
            f"p50 {statistics.median(took) * 1000:.1f} ms, max {max(took) * 1000:.1f} ms"
        )
        # interleaved rounds (1, 2, 4, 1, 2, 4, ...), medians: one round lasts about two seconds,
        # and a shared machine's noise moves single rounds by a third
        rounds: dict[int, list[tuple[float, float]]] = {1: [], 2: [], 4: []}
        for r in range(args.rounds):
            for n in rounds:
                rounds[n].append(throughput(url, n, args.threads, r * 10 + n))
        figures = {
            n: (statistics.median(x[0] for x in got), statistics.median(x[1] for x in got))
            for n, got in rounds.items()
        }
        for n, (rate, cpu) in figures.items():
            print(
                f"{n} worker(s), {args.threads} threads at once, median of {args.rounds} rounds: "
                f"{rate:.1f} threads/s (rounds {', '.join(f'{x[0]:.0f}' for x in rounds[n])}), "
                f"{cpu * 1000:.1f} ms CPU per answered thread"
            )
        print(
            f"throughput 2 workers vs 1: {figures[2][0] / figures[1][0]:.2f}x; "
            f"CPU per answered thread 4 workers vs 1: {figures[4][1] / figures[1][1]:.2f}x "
            f"({os.cpu_count()} cores, PostgreSQL on the same machine)"
        )
    finally:
        asyncio.run(_admin(args.postgres, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


if __name__ == "__main__":
    main()
