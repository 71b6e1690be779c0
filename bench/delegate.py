"""Sub-agents (``delegate_task``): what a delegation costs, and how several run side by side.

The real ``openai`` client against the fake OpenAI-compatible server (answering at once), the
core on SQLite and a recording surface, as in production.

1. Cost: one request answered with a tool call made directly (2 model round trips) against the
   same tool call made by a sub-agent (4 round trips: the parent's call, the sub-agent's call
   and answer, the parent's answer): wall time per request, and what the delegation adds
   besides its two extra model round trips.
2. Side by side: 4 ``delegate_task`` calls in one answer, each sub-agent's tool taking 100 ms:
   the batch's wall time with 4 places per thread (the default) and with 1.

    python bench/delegate.py [--requests 100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.stats import percentile
from bot.api.inbound import Author, Inbound, ThreadKey
from bot.api.surface import SurfaceLimits
from bot.config import Settings
from bot.core import Core
from bot.delegate.tool import SUB_AGENT_PROMPT
from bot.infra.clock import SystemClock
from bot.llm.openai_model import build_openai_model
from bot.storage.sqlite.store import SqliteStore
from bot.tools import ToolContext, ToolRegistry, tool
from bot.tools.builtin import builtin_tools
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply
from tests.fakes.surface import RecordingSurface

FAST = SurfaceLimits(
    max_chars=4000, min_edit_interval=0.05, edits_per_minute=None, budget_key="bench"
)
ALICE = Author(id="bench:U1", display_name="Alice")
WORK_S = 0.1


@tool
async def lookup(ctx: ToolContext, what: str) -> str:
    """Looks up.

    Args:
        what: What.
    """
    return f"{what}: 42"


@tool
async def work(ctx: ToolContext, n: int) -> str:
    """Works a while.

    Args:
        n: Which.
    """
    await asyncio.sleep(WORK_S)
    return f"done {n}"


def respond(body: dict[str, Any]) -> Reply:
    messages = body["messages"]
    sub = messages[0]["content"].startswith(SUB_AGENT_PROMPT)
    last, asked = messages[-1], messages[1]["content"] if sub else messages[-1]["content"]
    if last["role"] == "tool":
        return Reply("The answer is 42.")
    if sub and "Do " in asked:
        return Reply(calls=[FakeCall("work", {"n": int(asked.rsplit(" ", 1)[1].rstrip("."))})])
    if sub or "directly" in asked:
        return Reply(calls=[FakeCall("lookup", {"what": "the answer"})])
    if "four" in asked:
        calls = [
            FakeCall("delegate_task", {"task": f"Do {n}.", "tools": ["work"]}) for n in range(4)
        ]
        return Reply(calls=calls)
    return Reply(
        calls=[FakeCall("delegate_task", {"task": "Find the answer.", "tools": ["lookup"]})]
    )


async def _core(tmp: str, fake: FakeOpenAI, **settings: Any) -> Core:
    config = Settings(data_dir=Path(tmp), openai_base_url=fake.base_url, **settings)
    clock = SystemClock()
    model = build_openai_model(config, clock, rng=random.Random(0))
    core = Core(
        config,
        SqliteStore(config.database_path),
        model,
        ToolRegistry([*builtin_tools(), lookup, work]),
        clock,
    )
    await core.start()
    return core


async def _timed(core: Core, words: str, n: int) -> float:
    key = ThreadKey(f"bench:{json.dumps(words)}:{n}")
    surface = RecordingSurface(SystemClock(), FAST, thread_key=key)
    began = time.perf_counter()
    await core.handle(Inbound(key, ALICE, words, f"ev{key}"), surface)
    took = time.perf_counter() - began
    assert surface.texts()[-1].endswith("The answer is 42."), surface.texts()
    return took * 1000


async def cost(requests: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeOpenAI(default=respond) as fake:
            core = await _core(tmp, fake)
            for i in range(10):  # warm up (connections, the database file, the code paths)
                await _timed(core, "Look it up directly", -i - 1)
                await _timed(core, "Ask a sub-agent", -i - 1)
            direct: list[float] = []
            delegated: list[float] = []
            for i in range(requests):  # interleaved, so both see the same machine
                direct.append(await _timed(core, "Look it up directly", i))
                delegated.append(await _timed(core, "Ask a sub-agent", i))
            await core.aclose()
    extra = statistics.median(delegated) - statistics.median(direct)
    print(f"cost of a delegation, {requests} requests each (fake model answering at once):")
    print(
        f"  direct tool call (2 round trips):   p50 {statistics.median(direct):.1f} ms   p95 {percentile(direct, 95):.1f} ms"
    )
    print(
        f"  through a sub-agent (4 round trips): p50 {statistics.median(delegated):.1f} ms   p95 {percentile(delegated, 95):.1f} ms"
    )
    print(
        f"  a delegation adds (its 2 model round trips, its mini-session, its progress): {extra:.1f} ms at p50"
    )


async def side_by_side(rounds: int) -> None:
    for places in (4, 1):
        with tempfile.TemporaryDirectory() as tmp:
            async with FakeOpenAI(default=respond) as fake:
                core = await _core(tmp, fake, delegate_max_concurrent=places)
                times = [await _timed(core, "Do four things", i) for i in range(rounds)]
                await core.aclose()
        print(
            f"4 delegations in one answer, each tool {WORK_S * 1000:.0f} ms, {places} place(s) per thread: "
            f"p50 {statistics.median(times):.0f} ms   max {max(times):.0f} ms"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=100)
    args = parser.parse_args()
    await cost(args.requests)
    await side_by_side(max(3, args.requests // 20))


if __name__ == "__main__":
    asyncio.run(main())
