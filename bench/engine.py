"""The engine's own time, and its cost under many concurrent threads.

1. Gap: in a tool loop on a thread holding a 200-message history (~78 KB), the time from the
   fake server's last byte of one streamed response to its receipt of the next request. That is
   everything the engine does between model calls: collect the pieces, persist the assistant
   message (SQLite), run a trivial tool, persist its result, build and send the next request.
   The presenter and a recording surface are in the loop, as in production.
2. Load: 200 threads answered at once (the fake server in another process), each reply ~200
   tokens streamed in small chunks through the presenter: CPU seconds of the bot's process per
   1,000 streamed tokens, and its peak RSS.

    python bench/engine.py [--turns 60] [--threads 200]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.stats import percentile
from bot.clock import SystemClock
from bot.config import Settings
from bot.conversation import Author, Inbound, ThreadKey
from bot.core import Core
from bot.llm.messages import AssistantMessage, Message, ToolCall, ToolResult, UserMessage
from bot.llm.openai_model import build_openai_model
from bot.present.surface import SurfaceLimits
from bot.storage.sqlite import SqliteStore
from bot.tools import ToolContext, ToolRegistry, tool
from bot.tools.builtin import builtin_tools
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply
from tests.fakes.surface import RecordingSurface

FAST = SurfaceLimits(max_chars=4000, min_edit_interval=0.05, edits_per_minute=None, budget_key="bench")
ALICE = Author(id="bench:U1", display_name="Alice")


@tool
async def noop(ctx: ToolContext, n: int) -> str:
    """Does nothing.

    Args:
        n: Any number.
    """
    return f"ok {n}"


class TimedModel:
    """The real model, with the time each call started and ended (our side of the wire)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name, self.label = inner.name, inner.label
        self.started: list[float] = []
        self.ended: list[float] = []

    async def stream(self, request: Any) -> Any:
        self.started.append(time.monotonic())
        async for piece in self.inner.stream(request):
            yield piece
        self.ended.append(time.monotonic())

    async def aclose(self) -> None:
        await self.inner.aclose()


def history(count: int) -> list[Message]:
    out: list[Message] = []
    while len(out) < count:
        i = len(out)
        call = ToolCall(id=f"h{i}", wire_id=f"h{i}", name="noop", arguments='{"n": 1}')
        out += [
            UserMessage(text=f"question {i}: " + "words " * 40, author_name="Alice"),
            AssistantMessage(text="Let me check. " + "reasoning " * 30, tool_calls=(call,)),
            ToolResult(call_id=f"h{i}", name="noop", content="result " * 40),
            AssistantMessage(text="Here is what I found. " + "detail " * 30),
        ]
    return out[:count]


async def gap(turns: int) -> None:
    state = {"n": 0}

    def respond(body: dict[str, Any]) -> Reply:
        state["n"] += 1
        if state["n"] >= turns:
            return Reply("Done.")
        return Reply("Checking.", calls=[FakeCall("noop", {"n": state["n"]})], text_chunk_chars=4)

    with tempfile.TemporaryDirectory() as tmp:
        async with FakeOpenAI(default=respond) as fake:
            settings = Settings(data_dir=Path(tmp), openai_base_url=fake.base_url, max_turns=turns + 5)
            clock = SystemClock()
            model = TimedModel(build_openai_model(settings, clock, rng=random.Random(0)))
            store = SqliteStore(settings.database_path)
            core = Core(settings, store, model, ToolRegistry([*builtin_tools(), noop]), clock)
            await core.start()
            key = ThreadKey("bench:gap")
            session = await store.load_session(key, clock.now())
            await store.append_messages(session, history(200))
            surface = RecordingSurface(clock, FAST, thread_key=key)
            await core.handle(Inbound(key, ALICE, "go", "gap-1"), surface)
            await core.aclose()
            reqs = fake.requests
            size = reqs[1].raw_size
    gaps = [(b.received_at - a.last_byte_at) * 1000 for a, b in zip(reqs, reqs[1:], strict=False)]
    gaps = gaps[2:]  # warm-up: first connection, caches
    ours = [(s - e) * 1000 for e, s in zip(model.ended, model.started[1:], strict=False)][2:]
    sent = [(r.received_at - s) * 1000 for s, r in zip(model.started, reqs, strict=False)][2:]
    print(f"engine gap over {len(gaps)} tool turns, history 200+ messages ({size / 1024:.0f} KiB body):")
    print(
        f"  p50 {statistics.median(gaps):.2f} ms   p90 {percentile(gaps, 0.9):.2f} ms   "
        f"p99 {percentile(gaps, 0.99):.2f} ms   max {max(gaps):.2f} ms"
    )
    print(
        f"  of which: engine between calls (last piece -> next request built) p50 "
        f"{statistics.median(ours):.2f} ms; request out (client, loopback, server reading the body) "
        f"p50 {statistics.median(sent):.2f} ms; the rest is the client reading the last chunks"
    )


def _serve(port_out: Any, stop: Any) -> None:
    async def main() -> None:
        def respond(body: dict[str, Any]) -> Reply:
            return Reply("word " * 200, completion_tokens=200, text_chunk_chars=20)

        async with FakeOpenAI(default=respond) as fake:
            port_out.put(fake.base_url)
            await asyncio.to_thread(stop.wait)

    asyncio.run(main())


async def load(threads: int) -> None:
    ctx = multiprocessing.get_context("spawn")
    port_out, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=_serve, args=(port_out, stop), daemon=True)
    server.start()
    base_url = port_out.get(timeout=30)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            settings = Settings(data_dir=Path(tmp), openai_base_url=base_url)
            clock = SystemClock()
            core = Core(
                settings,
                SqliteStore(settings.database_path),
                build_openai_model(settings, clock, rng=random.Random(0)),
                ToolRegistry(builtin_tools()),
                clock,
            )
            await core.start()
            surfaces = [
                RecordingSurface(clock, FAST, thread_key=f"bench:t{i}") for i in range(threads)
            ]
            before = resource.getrusage(resource.RUSAGE_SELF)
            started = time.perf_counter()
            await asyncio.gather(
                *(
                    core.handle(Inbound(s.thread_key, ALICE, "talk to me", f"load-{i}"), s)
                    for i, s in enumerate(surfaces)
                )
            )
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_SELF)
            await core.aclose()
    finally:
        stop.set()
        server.join(timeout=10)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    tokens = threads * 200
    exact = sum(s.texts() == [("word " * 200).strip()] or s.visible_text().strip() == ("word " * 200).strip() for s in surfaces)
    edits = statistics.mean(s.count("edit") for s in surfaces)
    print(f"{threads} threads at once, 200 tokens each ({tokens:,} tokens), fake server in another process:")
    print(f"  wall {wall:.2f} s   CPU {cpu:.2f} s   = {cpu / tokens * 1000:.3f} CPU s per 1k tokens")
    print(f"  peak RSS {after.ru_maxrss / 1024:.0f} MiB   edits per thread {edits:.1f}   exact final text {exact}/{threads}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--threads", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(gap(args.turns))
    asyncio.run(load(args.threads))


if __name__ == "__main__":
    main()
