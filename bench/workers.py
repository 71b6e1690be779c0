"""Several workers on one PostgreSQL database: what sharing the work costs and how fast it moves.

1. Takeover: a worker dies mid-run (its connections cut, nothing released: as a SIGKILL leaves
   it); the time until the thread's run resumes on the other worker (its model is asked again).
   With the default lease (10 s, renewed every 3.3 s) and poll (1 s); its connections cut, the
   dead worker is known gone at once (:mod:`bot.storage.postgres.presence`).
2. Click on another worker: a run paused for approval on worker A; the click arrives at worker
   B; the time from the click until the run's next model request (on B).
3. Throughput: T threads answered at once, shared among 1, 2 and 4 worker processes, each with
   the real ``openai`` client asking a model server on loopback that answers at once
   (``bench/quick_model.py``, in a process of its own; ``--model inline``: a model in each
   worker's process instead) and a surface that does nothing, so the bot is CPU-bound: threads
   per second, and CPU seconds per answered thread of the workers (the cost of coordination),
   of PostgreSQL when it runs on this machine and of the model server (read from /proc over the
   measured window). On shared cores the database's CPU sets the ceiling: with w the workers'
   CPU per thread, p the database's and m the model server's, one worker filling a core answers
   1/w threads a second and two on both cores at most 2/(w + p + m): at most 2w/(w + p + m)
   times as many, which the last line says.

The database is made for the run on the server at ``--postgres`` and dropped at the end.

Each worker sets Python's collector as ``threadline run`` does once started
(:func:`bot.infra.collector.settle`), or leaves Python's default with ``--gc default``.

    python bench/workers.py [--takeovers 5] [--clicks 20] [--threads 2000] [--rounds 7] [--model loopback|inline] [--gc tuned|default]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from statistics import median
from typing import Any

from pydantic import SecretStr

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.quick_model import QuickModel
from bench.stats import POSTGRES, admin
from bot.api.inbound import Author, Inbound, ThreadKey
from bot.config import Settings
from bot.core import Core
from bot.infra import collector
from bot.infra.clock import SystemClock
from bot.llm.model import ModelPiece, ModelRequest
from bot.llm.openai_model import build_openai_model
from bot.storage.postgres.store import PostgresStore
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


async def worker(
    url: str, name: str, model: Model | str, threads: Threads, **settings: Any
) -> Core:
    """A worker on ``url`` whose model is ``model``, or the real client of the server at the
    base URL ``model``."""
    data = Path(tempfile.mkdtemp(prefix="threadline-bench-"))
    config = Settings(data_dir=data, worker_id=name, workspace_tools=False, **settings)
    if isinstance(model, str):
        config = config.model_copy(
            update={"openai_base_url": model, "openai_api_key": SecretStr("bench")}
        )
    chosen = (
        build_openai_model(config, SystemClock(), rng=random.Random(0))
        if isinstance(model, str)
        else model
    )
    core = Core(config, PostgresStore(url), chosen, ToolRegistry([deploy]), SystemClock())
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
    await asyncio.gather(
        *(core.handle(i, s) for i, s in zip(inbounds, surfaces, strict=True) if s is not None)
    )


def _serve(
    url: str,
    model_url: str | None,
    name: str,
    keys: list[str],
    start_at: float,
    out: Any,
    gc: str = "tuned",
) -> None:
    async def main() -> None:
        core = await worker(url, name, model_url or Model(), Threads())
        inbounds = [Inbound(ThreadKey(k), ALICE, "hello there", f"{k}:1") for k in keys]
        # warm: the pool's connections open and prepare their statements before the clock starts,
        # so the figures are the steady cost of a thread, not each worker's start-up
        warm = [
            Inbound(ThreadKey(f"bench:warm:{name}:{n}"), ALICE, "hello", f"bench:warm:{name}:{n}")
            for n in range(400)
        ]
        await answer(core, warm)
        if gc == "tuned":
            collector.settle()
        await asyncio.sleep(max(0.0, start_at - time.time()))
        cpu0, wall0 = time.process_time(), time.perf_counter()
        await answer(core, inbounds)
        out.put((name, time.perf_counter() - wall0, time.process_time() - cpu0, len(keys)))
        await core.aclose()

    asyncio.run(main())


def postgres_cpu_s() -> float | None:
    """CPU seconds used so far by the PostgreSQL server on this machine: its live processes,
    and the backends that ended (counted in the postmaster's children's time). None when no
    PostgreSQL runs here (a server elsewhere)."""
    tick = os.sysconf("SC_CLK_TCK")
    total, found = 0, False
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if not Path(f"/proc/{pid}/comm").read_text().startswith("postgres"):
                continue
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        found = True
        total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return total / tick if found else None


Figures = tuple[float, float, float | None, float | None]
"""Threads per second; CPU seconds per answered thread of the workers, of PostgreSQL (None when
it runs elsewhere) and of the model server (None: the model is in the workers' processes)."""


def throughput(
    url: str, model: QuickModel | None, workers: int, threads: int, run: int, gc: str = "tuned"
) -> Figures:
    """:data:`Figures` with ``workers`` processes, asking ``model`` (None: a model in-process)."""
    keys = [f"bench:load:{run}:{n}" for n in range(threads)]
    out: multiprocessing.Queue[Any] = multiprocessing.Queue()
    start_at = time.time() + 5.0  # every worker started, connected and warm
    procs = [
        multiprocessing.Process(
            target=_serve,
            args=(
                url,
                model and model.base_url,
                f"w{run}-{i}",
                keys[i::workers],
                start_at,
                out,
                gc,
            ),
        )
        for i in range(workers)
    ]
    for p in procs:
        p.start()
    time.sleep(max(0.0, start_at - time.time()))
    database_from, model_from = postgres_cpu_s(), model.cpu_s() if model else None
    results = [out.get(timeout=300) for _ in procs]
    database_to, model_to = postgres_cpu_s(), model.cpu_s() if model else None
    for p in procs:
        p.join()
    wall = max(r[1] for r in results)
    cpu = sum(r[2] for r in results)
    database = (
        None
        if database_from is None or database_to is None
        else (database_to - database_from) / threads
    )
    fake = None if model_from is None or model_to is None else (model_to - model_from) / threads
    return threads / wall, cpu / threads, database, fake


def print_throughput(
    url: str, model: QuickModel | None, threads: int, count: int, gc: str = "tuned"
) -> None:
    # interleaved rounds (1, 2, 4, 1, 2, 4, ...), medians: a shared machine's noise moves single
    # rounds by a third
    rounds: dict[int, list[Figures]] = {1: [], 2: [], 4: []}
    for r in range(count):
        for n in rounds:
            rounds[n].append(throughput(url, model, n, threads, r * 10 + n, gc))

    def cpu(n: int, part: int) -> float | None:
        found = [x[part] for x in rounds[n] if x[part] is not None]
        return median(found) if found else None  # type: ignore[type-var]

    where = "a model server on loopback" if model else "a model in each worker's process"
    for n, got in rounds.items():
        database, fake = cpu(n, 2), cpu(n, 3)
        print(
            f"{n} worker(s), {threads} threads at once ({where}), median of {count} rounds: "
            f"{median(x[0] for x in got):.1f} threads/s (rounds {', '.join(f'{x[0]:.0f}' for x in got)}); "
            f"CPU per answered thread: workers {cpu(n, 1) * 1000:.2f} ms"  # type: ignore[operator]
            + ("" if database is None else f", PostgreSQL {database * 1000:.2f} ms")
            + ("" if fake is None else f", model server {fake * 1000:.2f} ms")
        )
    w, p, f = cpu(1, 1) or 0.0, cpu(1, 2), cpu(1, 3) or 0.0
    rate = {n: median(x[0] for x in got) for n, got in rounds.items()}
    # each round's 2 workers against the same round's 1, run a few seconds apart: the machine's
    # drift over the minutes of the benchmark (the tables grow, a neighbour wakes) cancels out
    paired = [two[0] / one[0] for one, two in zip(rounds[1], rounds[2], strict=True)]
    bound = (
        ""
        if p is None
        else f"; sharing them, 2 workers can reach at best 2w/(w+p+m) = {2 * w / (w + p + f):.2f}x"
    )
    print(
        f"throughput 2 workers vs 1: {rate[2] / rate[1]:.2f}x (round by round: median {median(paired):.2f}x, "
        f"{', '.join(f'{x:.2f}' for x in paired)}); CPU per answered thread 4 workers vs 1: "
        f"{(cpu(4, 1) or 0.0) / w:.2f}x ({os.cpu_count()} cores, PostgreSQL on the same machine{bound})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--postgres",
        default=POSTGRES,
    )
    parser.add_argument("--takeovers", type=int, default=5)
    parser.add_argument("--clicks", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--model",
        choices=["loopback", "inline"],
        default="loopback",
        help="throughput: the real client asking a model server on loopback, or a model in the worker's process",
    )
    parser.add_argument("--gc", choices=["tuned", "default"], default="tuned")
    args = parser.parse_args()
    name = f"threadline_bench_{secrets.token_hex(4)}"
    asyncio.run(admin(args.postgres, f'CREATE DATABASE "{name}"'))
    url = args.postgres.rsplit("/", 1)[0] + f"/{name}"
    try:
        times = [asyncio.run(takeover(url, n)) for n in range(args.takeovers)]
        if times:
            q = (
                statistics.quantiles(times, n=20, method="inclusive")
                if len(times) > 1
                else times * 19
            )
            print(
                f"takeover (kill -> run resumes on the other worker), {len(times)} kills: "
                f"p50 {statistics.median(times):.2f} s, p95 {q[18]:.2f} s, max {max(times):.2f} s"
            )
        took = asyncio.run(clicks(url, args.clicks)) if args.clicks else []
        if took:
            print(
                f"click on the other worker -> run resumes, {len(took)} clicks: "
                f"p50 {statistics.median(took) * 1000:.1f} ms, max {max(took) * 1000:.1f} ms"
            )
        model = QuickModel.start() if args.model == "loopback" else None
        try:
            print_throughput(url, model, args.threads, args.rounds, args.gc)
        finally:
            if model is not None:
                model.stop()
    finally:
        asyncio.run(admin(args.postgres, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


if __name__ == "__main__":
    main()
