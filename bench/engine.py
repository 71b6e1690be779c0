"""The engine's own time, and its cost under many concurrent threads.

1. Round trip: in a tool loop on a thread holding a 200-message history (~67 KiB body), the
   engine's overhead per model round trip, with a fake model server (in another process) that
   answers at once. Each call answers with a short text and a trivial tool call, so the loop
   collects the pieces, stores the round trip (SQLite), runs the tool, and builds and sends the
   next request; the presenter and a recording surface are in the loop, as in production.
   Two figures:
   * overhead: in our process, from the last bytes of one response arriving to the next request
     being handed to the HTTP client's send (everything but the model's time: the client's SSE
     parsing and request building, the engine, the store, the presenter);
   * gap: as the fake server sees it, from its last byte sent to the next request read (adds the
     HTTP client's sending, the loopback both ways and the server's own reading of the body).
   The bare ``openai`` client (same transport, plain JSON, no store, presenter or tools) runs
   the same loop as this machine's floor.
2. Load: 200 threads answered at once (the fake server in another process), each reply ~200
   tokens streamed in small chunks through the presenter: CPU seconds of the bot's process per
   1,000 streamed tokens, and its peak RSS; the time Python's garbage collector took, and the
   collector set as ``threadline run`` sets it after start-up (:mod:`bot.infra.collector`),
   or with ``--gc default`` as Python sets it.

Both on SQLite (a file in a temporary directory), or with ``--store postgres`` on a database
made for the run on the PostgreSQL server at ``--postgres`` (dropped at the end).

    python bench/engine.py [--turns 100] [--threads 200] [--store sqlite|postgres] [--gc tuned|default]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import multiprocessing
import random
import resource
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import openai
from openai import AsyncStream

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.stats import POSTGRES, admin, percentile
from bot.api.inbound import Author, Inbound, ThreadKey
from bot.api.surface import SurfaceLimits
from bot.config import Settings
from bot.core import Core
from bot.infra import collector
from bot.infra.clock import SystemClock
from bot.llm.messages import AssistantMessage, Message, ToolCall, ToolResult, UserMessage
from bot.llm.openai_model import OpenAIModel, build_openai_model
from bot.llm.retry import Backoff
from bot.storage.choose import store_for
from bot.tools import ToolContext, ToolRegistry, tool
from bot.tools.builtin import builtin_tools
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply
from tests.fakes.surface import RecordingSurface

FAST = SurfaceLimits(
    max_chars=4000, min_edit_interval=0.05, edits_per_minute=None, budget_key="bench"
)
ALICE = Author(id="bench:U1", display_name="Alice")


@tool
async def noop(ctx: ToolContext, n: int) -> str:
    """Does nothing.

    Args:
        n: Any number.
    """
    return f"ok {n}"


class TimedClient(openai.DefaultAioHttpClient):  # type: ignore[misc,valid-type]
    """The model's HTTP client, noting when each request is handed to it and when the last bytes
    of each response arrive."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[float] = []
        self.received: list[float] = []

    async def send(self, request: Any, **kwargs: Any) -> Any:
        self.sent.append(time.monotonic())
        response = await super().send(request, **kwargs)
        response.stream = _Timed(response.stream, self.received)
        return response

    def overheads(self) -> list[float]:
        """Milliseconds from each response's last bytes to the next request."""
        return [(s - r) * 1000 for r, s in zip(self.received, self.sent[1:], strict=False)]


class _Timed(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, into: list[float]) -> None:
        self._inner, self._into = inner, into

    async def __aiter__(self) -> AsyncIterator[bytes]:
        last = time.monotonic()
        async for chunk in self._inner:
            last = time.monotonic()
            yield chunk
        self._into.append(last)

    async def aclose(self) -> None:
        await self._inner.aclose()


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
    store = store_for(settings)
    return Core(settings, store, model, ToolRegistry([*builtin_tools(), *tools]), SystemClock())


def _server_gaps(timings: list[tuple[float, float, int]]) -> list[float]:
    """Milliseconds from the server's last byte of one response to its reading the next request."""
    return [(b[0] - a[1]) * 1000 for a, b in zip(timings, timings[1:], strict=False)]


def _line(name: str, values: list[float]) -> str:
    values = values[WARM_UP:]
    return (
        f"  {name:<44} p50 {statistics.median(values):5.2f} ms   p90 {percentile(values, 0.9):5.2f}"
        f"   p99 {percentile(values, 0.99):5.2f}"
    )


WARM_UP = 3


async def round_trip(turns: int, database_url: str | None) -> tuple[list[float], list[float], int]:
    """The engine in a tool loop: (overheads, server gaps, request body size)."""
    server = ServerProcess(GapReplies(turns))
    client = TimedClient()
    with tempfile.TemporaryDirectory() as tmp:
        async with server as base_url:
            settings = Settings(
                data_dir=Path(tmp),
                openai_base_url=base_url,
                max_turns=turns + 5,
                database_url=database_url,
            )
            clock = SystemClock()
            model = OpenAIModel(
                settings.model,
                api_key="bench",
                base_url=base_url,
                clock=clock,
                backoff=Backoff(max_retries=0, rng=random.Random(0)),
                http_client=client,
            )
            core = _core(settings, model, [noop])
            await core.start()
            key = ThreadKey("bench:gap")
            session = await core.store.load_session(key, core.clock.now())
            await core.store.append_messages(session, history(200))
            surface = RecordingSurface(core.clock, FAST, thread_key=key)
            await core.handle(Inbound(key, ALICE, "go", "gap-1"), surface)
            await core.aclose()
    return client.overheads(), _server_gaps(server.timings), server.timings[1][2]


async def bare(turns: int) -> tuple[list[float], list[float]]:
    """The same loop on the bare ``openai`` client (low-level ``post`` of a plain JSON body, no
    store, no presenter, no tools): what this machine allows before any engine work."""
    from bot.llm.wire import to_wire

    server = ServerProcess(GapReplies(turns))
    http = TimedClient()
    async with server as base_url:
        client = openai.AsyncOpenAI(
            base_url=base_url, api_key="bench", max_retries=0, http_client=http
        )
        messages = [*to_wire("be brief", history(200)), {"role": "user", "content": "go"}]
        for i in range(turns):
            body = {
                "model": "m",
                "messages": messages,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            stream = await client.post(
                "/chat/completions",
                cast_to=object,
                content=json.dumps(body).encode(),
                stream=True,
                stream_cls=AsyncStream[object],
                options={"headers": {"Content-Type": "application/json"}},
            )
            async for _ in stream:
                pass
            call = {
                "id": f"c{i}",
                "type": "function",
                "function": {"name": "noop", "arguments": "{}"},
            }
            messages += [
                {"role": "assistant", "content": "Checking.", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{i}", "content": "ok"},
            ]
        await client.close()
    return http.overheads(), _server_gaps(server.timings)


async def gap(turns: int, database_url: str | None) -> None:
    overheads, gaps, size = await round_trip(turns, database_url)
    bare_overheads, bare_gaps = await bare(turns)
    print(
        f"engine round trip over {len(gaps) - WARM_UP} tool turns, history 200+ messages "
        f"({size / 1024:.0f} KiB body), fake model server in another process, "
        f"store {'PostgreSQL' if database_url else 'SQLite'}:"
    )
    print(_line("overhead (last bytes in -> next send)", overheads))
    print(_line("gap as the server sees it", gaps))
    print("bare openai client, same loop and transport (this machine's floor):")
    print(_line("overhead (last bytes in -> next send)", bare_overheads))
    print(_line("gap as the server sees it", bare_gaps))


class CollectorTime:
    """The seconds Python's garbage collector takes, and its collections, while installed."""

    def __init__(self) -> None:
        self.seconds, self.collections, self._started = 0.0, 0, 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started
            self.collections += 1

    def __enter__(self) -> CollectorTime:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


async def load(threads: int, database_url: str | None, tuned: bool = True) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with ServerProcess(load_reply) as base_url:
            settings = Settings(
                data_dir=Path(tmp), openai_base_url=base_url, database_url=database_url
            )
            core = _core(
                settings, build_openai_model(settings, SystemClock(), rng=random.Random(0)), []
            )
            await core.start()
            if tuned:
                collector.settle()
            surfaces = [
                RecordingSurface(core.clock, FAST, thread_key=f"bench:t{i}") for i in range(threads)
            ]
            before = resource.getrusage(resource.RUSAGE_SELF)
            started = time.perf_counter()
            with CollectorTime() as collecting:
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
    store = "PostgreSQL" if database_url else "SQLite"
    print(
        f"{threads} threads at once, 200 tokens each ({tokens:,} tokens), fake server in another process, store {store}:"
    )
    print(
        f"  wall {wall:.2f} s   CPU {cpu:.2f} s   = {cpu / tokens * 1000:.3f} CPU s per 1k tokens"
        f"   {cpu / threads * 1000:.2f} ms per thread"
    )
    print(
        f"  garbage collector ({'as threadline run sets it' if tuned else 'Python default'}):"
        f" {collecting.seconds:.2f} s in {collecting.collections} collections"
        f" ({collecting.seconds / cpu:.0%} of the CPU)"
    )
    print(
        f"  peak RSS {after.ru_maxrss / 1024:.0f} MiB   edits per thread {edits:.1f}   exact final text {exact}/{threads}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--threads", type=int, default=200)
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--postgres", default=POSTGRES)
    parser.add_argument("--gc", choices=("tuned", "default"), default="tuned")
    parser.add_argument("--load-only", action="store_true", help="skip the round trip")
    args = parser.parse_args()
    tuned = args.gc == "tuned"
    if args.store == "sqlite":
        if not args.load_only:
            asyncio.run(gap(args.turns, None))
        asyncio.run(load(args.threads, None, tuned))
        return
    name = f"threadline_bench_{secrets.token_hex(4)}"
    asyncio.run(admin(args.postgres, f'CREATE DATABASE "{name}"'))
    try:
        url = args.postgres.rsplit("/", 1)[0] + f"/{name}"
        if not args.load_only:
            asyncio.run(gap(args.turns, url))
        asyncio.run(load(args.threads, url, tuned))
    finally:
        asyncio.run(admin(args.postgres, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


if __name__ == "__main__":
    main()
