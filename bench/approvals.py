"""Approvals and compaction, measured through the real core, store and ``openai`` client.

1. Approval round trip: from the click (``core.on_action``) to the fake model server receiving
   the resumed run's first request: the decision recorded once, the card updated, the thread
   lock taken, the session loaded, the tool run and its result stored, the request sent.
2. Compaction of a 500-message thread: time (the fake model answers at once, so this is our
   own cost plus one loopback round trip), estimated tokens before and after, and the memory
   of the loaded session before and after (tracemalloc).

    python bench/approvals.py [--rounds 50]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.engine import history
from bot.api.inbound import Author, Inbound, ThreadKey
from bot.api.surface import SurfaceLimits
from bot.config import Settings
from bot.core import Core
from bot.engine.compact import compacted, estimate_tokens
from bot.infra.clock import SystemClock
from bot.llm.messages import ToolResult
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


@tool(side_effects=True)
async def deploy(ctx: ToolContext, target: str) -> str:
    """Deploys.

    Args:
        target: Where.
    """
    return f"deployed to {target}"


def respond(body: dict[str, Any]) -> Reply:
    if body["messages"][-1]["role"] == "tool":
        return Reply("Deployed.")
    return Reply("Deploying.", calls=[FakeCall("deploy", {"target": "prod"})])


async def round_trip(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeOpenAI(default=respond) as fake:
            settings = Settings(data_dir=Path(tmp), openai_base_url=fake.base_url)
            clock = SystemClock()
            core = Core(
                settings,
                SqliteStore(settings.database_path),
                build_openai_model(settings, clock, rng=random.Random(0)),
                ToolRegistry([*builtin_tools(), deploy]),
                clock,
            )
            await core.start()
            times: list[float] = []
            for i in range(rounds):
                key = ThreadKey(f"bench:a{i}")
                surface = RecordingSurface(clock, FAST, thread_key=key)
                await core.handle(Inbound(key, ALICE, "ship it", f"ev{i}"), surface)
                card = next(
                    m for m in surface.live() if m.buttons and m.buttons[0].label == "Approve"
                )
                seen = len(fake.requests)
                clicked = time.monotonic()
                await core.on_action(card.buttons[0].action_id, ALICE, surface)
                await fake.wait_for_requests(seen + 1)
                times.append((fake.requests[seen].received_at - clicked) * 1000)
                await core.wait_idle()
            await core.aclose()
    print(f"approval round trip (click -> resumed run's first model request), {rounds} threads:")
    print(f"  p50 {statistics.median(times):.2f} ms   max {max(times):.2f} ms")


async def compaction() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeOpenAI(
            default=lambda body: Reply("- a summary of the thread " * 20)
        ) as fake:
            settings = Settings(data_dir=Path(tmp), openai_base_url=fake.base_url)
            model = build_openai_model(settings, SystemClock(), rng=random.Random(0))
            store = SqliteStore(settings.database_path)
            await store.open()
            key = ThreadKey("bench:long")
            session = await store.load_session(key, 0.0)
            await store.append_messages(session, history(500))
            before_tokens = estimate_tokens(session.messages)
            before_mem = await _session_memory(store, key)
            started = time.perf_counter()
            shorter = await compacted(model, session.messages, keep_turns=4)
            assert shorter is not None
            await store.replace_messages(session, shorter)
            took = (time.perf_counter() - started) * 1000
            after_tokens = estimate_tokens(session.messages)
            after_mem = await _session_memory(store, key)
            calls = {m.call_id for m in session.messages if isinstance(m, ToolResult)}
            await store.close()
            await model.aclose()
    print("compaction of a 500-message thread (keeping the last 4 turns):")
    print(
        f"  time {took:.1f} ms   messages 500 -> {len(shorter)}   results kept with their calls: {len(calls)}"
    )
    print(
        f"  estimated tokens {before_tokens:,} -> {after_tokens:,} ({1 - after_tokens / before_tokens:.0%} saved)"
    )
    print(f"  loaded session memory {before_mem / 1024:.0f} KiB -> {after_mem / 1024:.0f} KiB")


async def _session_memory(store: SqliteStore, key: ThreadKey) -> int:
    tracemalloc.start()
    session = await store.load_session(key, 0.0)
    size, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert session.messages
    return size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(round_trip(args.rounds))
    asyncio.run(compaction())


if __name__ == "__main__":
    main()
