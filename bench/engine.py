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


class GapReplies:
    """A tool call per answer until ``turns`` answers, then a final text."""

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.n = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.n += 1
        if self.n >= self.turns:
            return Reply("Done.")
        return Reply("Checking.", calls=[FakeCall("noop", {"n": self.n})], text_chunk_chars=4)


def load_reply(body: dict[str, Any]) -> Reply:
    return Reply("word " * 200, completion_tokens=200, text_chunk_chars=20)


def _serve(respond: Any, port_out: Any, stop: Any, timings_out: Any) -> None:
    """The fake model server, in its own process (so its work does not share our CPU)."""

    async def main() -> None:
        async with FakeOpenAI(default=respond) as fake:
            port_out.put(fake.base_url)
            await asyncio.to_thread(stop.wait)
            timings_out.put([(r.received_at, r.last_byte_at, r.raw_size) for r in fake.requests])

    asyncio.run(main())


class ServerProcess:
    """``async with ServerProcess(respond) as base_url``; ``timings`` once it has closed.

    The server's ``time.monotonic()`` is the same clock as ours (one machine), so its
    timestamps and ours can be subtracted."""

    def __init__(self, respond: Any) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._port, self._stop, self._timings = ctx.Queue(), ctx.Event(), ctx.Queue()
        self._process = ctx.Process(
            target=_serve, args=(respond, self._port, self._stop, self._timings), daemon=True
        )
        self.timings: list[tuple[float, float, int]] = []

    async def __aenter__(self) -> str:
        self._process.start()
        return str(await asyncio.to_thread(self._port.get, True, 30))

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        self.timings = await asyncio.to_thread(self._timings.get, True, 30)
        await asyncio.to_thread(self._process.join, 10)


def _core(settings: Settings, model: Any, tools: list[Any]) -> Core:
    store = SqliteStore(settings.database_path)
    return Core(settings, store, model, ToolRegistry([*builtin_tools(), *tools]), SystemClock())


async def gap(turns: int) -> None:
    server = ServerProcess(GapReplies(turns))
    with tempfile.TemporaryDirectory() as tmp:
        async with server as base_url:
            settings = Settings(data_dir=Path(tmp), openai_base_url=base_url, max_turns=turns + 5)
            model = TimedModel(build_openai_model(settings, SystemClock(), rng=random.Random(0)))
            core = _core(settings, model, [noop])
            await core.start()
            key = ThreadKey("bench:gap")
            session = await core.store.load_session(key, core.clock.now())
            await core.store.append_messages(session, history(200))
            surface = RecordingSurface(core.clock, FAST, thread_key=key)
            await core.handle(Inbound(key, ALICE, "go", "gap-1"), surface)
            await core.aclose()
    reqs = server.timings  # (received_at, last_byte_at, body size)
    gaps = [(b[0] - a[1]) * 1000 for a, b in zip(reqs, reqs[1:], strict=False)][2:]  # 2 warm-up
    ours = [(s - e) * 1000 for e, s in zip(model.ended, model.started[1:], strict=False)][2:]
    sent = [(r[0] - s) * 1000 for s, r in zip(model.started, reqs, strict=False)][2:]
    print(f"engine gap over {len(gaps)} tool turns, history 200+ messages ({reqs[1][2] / 1024:.0f} KiB"
          " body), fake model server in another process:")
    print(
        f"  p50 {statistics.median(gaps):.2f} ms   p90 {percentile(gaps, 0.9):.2f} ms   "
        f"p99 {percentile(gaps, 0.99):.2f} ms   max {max(gaps):.2f} ms"
    )
    print(
        f"  of which: engine between calls (stream end -> next stream() call) p50 "
        f"{statistics.median(ours):.2f} ms; request out (client, loopback, server reading the body) "
        f"p50 {statistics.median(sent):.2f} ms; the rest is the client reading the last chunks"
    )


async def bare(turns: int) -> None:
    """The same loop with the bare ``openai`` client (low-level ``post`` of a plain JSON body, no
    store, no presenter, no tools): what this machine allows before any engine work."""
    import json

    import openai
    from openai import AsyncStream

    from bot.llm.wire import to_wire

    server = ServerProcess(GapReplies(turns))
    async with server as base_url:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
        messages = [*to_wire("be brief", history(200)), {"role": "user", "content": "go"}]
        for i in range(turns):
            body = {"model": "m", "messages": messages, "stream": True,
                    "stream_options": {"include_usage": True}}  # fmt: skip
            stream = await client.post(
                "/chat/completions", cast_to=object, content=json.dumps(body).encode(),
                stream=True, stream_cls=AsyncStream[object],
                options={"headers": {"Content-Type": "application/json"}},
            )  # fmt: skip
            async for _ in stream:
                pass
            call = {"id": f"c{i}", "type": "function", "function": {"name": "noop", "arguments": "{}"}}
            messages += [
                {"role": "assistant", "content": "Checking.", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{i}", "content": "ok"},
            ]
        await client.close()
    reqs = server.timings
    gaps = [(b[0] - a[1]) * 1000 for a, b in zip(reqs, reqs[1:], strict=False)][2:]
    print(f"  baseline, the bare openai client in the same loop: p50 {statistics.median(gaps):.2f} ms"
          f"   p90 {percentile(gaps, 0.9):.2f} ms")


async def load(threads: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with ServerProcess(load_reply) as base_url:
            settings = Settings(data_dir=Path(tmp), openai_base_url=base_url)
            core = _core(settings, build_openai_model(settings, SystemClock(), rng=random.Random(0)), [])
            await core.start()
            surfaces = [RecordingSurface(core.clock, FAST, thread_key=f"bench:t{i}") for i in range(threads)]
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
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    tokens = threads * 200
    want = ("word " * 200).strip()
    exact = sum(s.visible_text().strip() == want for s in surfaces)
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
    asyncio.run(bare(args.turns))
    asyncio.run(load(args.threads))


if __name__ == "__main__":
    main()
