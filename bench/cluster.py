"""Four worker processes on one PostgreSQL database, 500 threads answered at once, one worker
SIGKILLed mid-run: does anything get lost or done twice, and how fast are its threads taken over?

Each thread's message reaches one of the workers (a quarter each, as a platform spreads its
events); the model answers at once, first with one call of ``record`` (a tool with side effects,
approved by a rule: ``approval = "never"``), which appends the thread's key to a file shared by
all workers, then with "Done.". As soon as the first worker has taken in all of its messages
(its runs started, many in flight), it is SIGKILLed; the others take its threads over once
their leases expire or its connection ends (the default lease time and poll, unless given).
With ``--think S`` the model takes S seconds over each thread's first call, so that every run of
the killed worker is in flight (its lease held) when it dies.

Printed: messages lost (threads never answered), runs executed twice (a thread answered twice
or its message taken in twice), duplicate side effects (a key recorded twice, counted from the
tool's own file), side effects left undone by the kill (the call interrupted before it ran:
"outcome unknown", never re-run), takeover time p50/p95 (kill → the thread's next model call on
another worker), total time. The database is made as ``bench/workers.py`` makes it (a fresh
one on the server at ``--postgres``, dropped at the end), and its thread surfaces are used.

    python bench/cluster.py [--threads 500] [--workers 4] [--lease-ttl 10] [--poll 1] [--think 0]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import os
import secrets
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.workers import ALICE, Threads, _admin
from bot.api.inbound import Inbound, ThreadKey
from bot.config import Settings, ToolSettings
from bot.core import Core
from bot.infra.clock import SystemClock
from bot.llm.messages import AssistantMessage, UserMessage
from bot.llm.model import ModelPiece, ModelRequest
from bot.storage.postgres.store import PostgresStore
from bot.tools import ToolContext, ToolRegistry, tool
from tests.fakes.scripted_model import call, step, text

ASKED = "record "
STOP_WITHIN_S = 300
DONE = "Done."


class Model:
    """Answers at once (or after ``think_s`` on a thread's first call): a call of ``record`` for
    the thread's message, then "Done."; every call is noted (thread, wall time)."""

    name = "bench"
    label = "bench model"

    def __init__(self, think_s: float = 0.0) -> None:
        self.calls: list[tuple[str, float]] = []
        self.think_s = think_s

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        asked = next(
            m.text
            for m in request.messages
            if isinstance(m, UserMessage) and m.text.startswith(ASKED)
        )
        key = asked.removeprefix(ASKED)
        self.calls.append((key, time.time()))
        first = isinstance(request.messages[-1], UserMessage)  # else it follows the call's result
        if first and self.think_s:
            await asyncio.sleep(self.think_s)
        for piece in step(call("record", {"thread": key})) if first else text(DONE):
            yield piece

    async def aclose(self) -> None:
        return None


def registry(effects: Path) -> ToolRegistry:
    @tool(side_effects=True)
    async def record(ctx: ToolContext, thread: str) -> str:
        """Record that this thread's work was done (a side effect: one line in a shared file).

        Args:
            thread: The thread.
        """
        with effects.open("a") as out:  # one short append: whole lines from every worker
            out.write(f"{thread}\n")
        return "recorded"

    return ToolRegistry([record])


def _serve(
    url: str,
    name: str,
    keys: list[str],
    effects: str,
    start_at: float,
    settings: dict[str, Any],
    out: Any,
    stop: Any,
) -> None:
    logging.basicConfig(level=logging.ERROR)  # takeovers and repairs are counted, not logged

    async def main() -> None:
        model = Model(settings.pop("think_s"))
        config = Settings(
            data_dir=Path(tempfile.mkdtemp(prefix="threadline-bench-")),
            worker_id=name,
            workspace_tools=False,
            tools={"record": ToolSettings(approval="never")},
            **settings,
        )
        core = Core(config, PostgresStore(url), model, registry(Path(effects)), SystemClock())
        core.register_surfaces("bench:", Threads())
        await core.start()
        await asyncio.sleep(max(0.0, start_at - time.time()))
        works = []
        for k in keys:  # each message taken in (stored) at once, its run started
            surface = core.surfaces.surface_for(ThreadKey(k))
            works.append(
                await core.admit(Inbound(ThreadKey(k), ALICE, ASKED + k, f"{k}:1"), surface)
            )  # type: ignore[arg-type]
        out.put(("taken in", name, sum(w is not None for w in works)))  # the moment to kill w0
        await asyncio.gather(*(w for w in works if w is not None))
        for _ in range(STOP_WITHIN_S * 10):  # until every thread is answered (taken-over ones too)
            if stop.is_set():
                break
            await asyncio.sleep(0.1)
        await core.aclose()
        out.put(("calls", name, model.calls))

    asyncio.run(main())
    out.close()
    out.join_thread()  # what was put has reached the pipe


async def answered(url: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        return int(
            await conn.fetchval(
                "SELECT count(*) FROM sessions s WHERE s.state = 'idle'"
                " AND NOT EXISTS (SELECT 1 FROM arrivals a WHERE a.key = s.key)"
            )
        )
    finally:
        await conn.close()


async def until_answered(url: str, threads: int, within: float) -> float:
    """Wait until every thread's session is idle with nothing waiting; the time it happened."""
    for _ in range(int(within / 0.2)):
        if await answered(url) >= threads:
            break
        await asyncio.sleep(0.2)
    return time.time()


async def transcripts(url: str, keys: list[str]) -> tuple[int, int]:
    """(threads never answered, threads answered or taken in twice), from the store."""
    store = PostgresStore(url, pool_size=2)
    await store.open()
    lost = twice = 0
    try:
        for key in keys:
            session = await store.load_session(ThreadKey(key), time.time())
            asked = sum(
                isinstance(m, UserMessage) and m.text == ASKED + key for m in session.messages
            )
            done = sum(isinstance(m, AssistantMessage) and m.text == DONE for m in session.messages)
            lost += asked == 0 or done == 0
            twice += asked > 1 or done > 1
    finally:
        await store.close()
    return lost, twice


def quantiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return (values[0], values[0]) if values else (float("nan"), float("nan"))
    return statistics.median(values), statistics.quantiles(values, n=20, method="inclusive")[18]


def run(url: str, args: argparse.Namespace, effects: Path) -> None:
    keys = [f"bench:cluster:{n}" for n in range(args.threads)]
    shares = [keys[i :: args.workers] for i in range(args.workers)]
    settings = {"lease_ttl_s": args.lease_ttl, "worker_poll_s": args.poll, "think_s": args.think}
    # a queue each: a process killed while it writes to a queue leaves that queue's lock held
    outs: list[multiprocessing.Queue[Any]] = [multiprocessing.Queue() for _ in range(args.workers)]
    stop = multiprocessing.Event()
    start_at = time.time() + 4.0  # every worker started and connected
    procs = [
        multiprocessing.Process(
            target=_serve,
            args=(
                url,
                f"w{i}",
                shares[i],
                str(effects),
                start_at,
                settings,
                outs[i],
                stop,
            ),
        )
        for i in range(args.workers)
    ]
    for p in procs:
        p.start()
    sys.stdout.flush()
    outs[0].get(timeout=120)  # w0 took in all of its messages
    os.kill(procs[0].pid or 0, signal.SIGKILL)  # mid-run: every message in, runs in flight
    killed_at = time.time()
    procs[0].join()
    done_at = asyncio.run(until_answered(url, args.threads, within=120 + args.lease_ttl))
    stop.set()
    calls: list[tuple[str, float]] = []
    for out in outs[1:]:
        kind, _, found = out.get(timeout=120)
        while kind != "calls":
            kind, _, found = out.get(timeout=120)
        calls.extend(found)
    for p in procs[1:]:
        p.join()

    lost, twice = asyncio.run(transcripts(url, keys))
    effects_of = Counter(effects.read_text().split()) if effects.exists() else Counter()
    duplicates = sum(1 for n in effects_of.values() if n > 1)
    undone = sum(1 for k in keys if effects_of[k] == 0)
    first_after: dict[str, float] = {}
    killed_keys = set(shares[0])
    for key, at in sorted(calls, key=lambda c: c[1]):  # the survivors' calls
        if key in killed_keys and at >= killed_at:
            first_after.setdefault(key, at)
    taken = [at - killed_at for at in first_after.values()]
    p50, p95 = quantiles(taken)
    print(
        f"{args.workers} workers, {args.threads} threads at once, worker w0 SIGKILLed once its "
        f"{len(shares[0])} messages were taken in (lease {args.lease_ttl:g} s, poll {args.poll:g} s):"
    )
    print(f"  lost messages: {lost}")
    print(f"  runs executed twice: {twice}")
    print(
        f"  duplicate side effects: {duplicates} (side effects left undone by the kill, outcome "
        f"unknown, never re-run: {undone})"
    )
    print(
        f"  takeover (kill -> the thread's next model call on another worker), {len(taken)} threads: "
        f"p50 {p50:.2f} s, p95 {p95:.2f} s"
    )
    print(
        f"  total time (start -> every thread answered): {done_at - start_at:.2f} s "
        f"({os.cpu_count()} cores, PostgreSQL on the same machine)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--postgres",
        default=os.environ.get(
            "THREADLINE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument("--threads", type=int, default=500)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument(
        "--think",
        type=float,
        default=0.0,
        help="seconds the model takes over each thread's first call (runs in flight at the kill)",
    )
    parser.add_argument(
        "--lease-ttl", type=float, default=Settings.model_fields["lease_ttl_s"].default
    )
    parser.add_argument(
        "--poll", type=float, default=Settings.model_fields["worker_poll_s"].default
    )
    args = parser.parse_args()
    name = f"threadline_bench_{secrets.token_hex(4)}"
    asyncio.run(_admin(args.postgres, f'CREATE DATABASE "{name}"'))
    url = args.postgres.rsplit("/", 1)[0] + f"/{name}"
    effects = Path(tempfile.mkdtemp(prefix="threadline-bench-effects-")) / "effects"
    try:
        run(url, args, effects)
    finally:
        asyncio.run(_admin(args.postgres, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


if __name__ == "__main__":
    main()
