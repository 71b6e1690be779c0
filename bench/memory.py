"""Memory: recall latency with 10,000 memories in one channel, through the real service and the
real SQLite store (FTS5).

The channel's notes are made of words drawn from a 3,000-word vocabulary with a Zipf-like
frequency, as real notes are (a few words everywhere, most words rare); another channel holds
as many again, which recall must skip. Measured per call: recall of a rare word, of a common
word (in thousands of notes), of two words, and the memory note read before each model call.

    python bench/memory.py [--memories 10000] [--queries 200]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.stats import percentile
from bot.config import Settings
from bot.infra.clock import SystemClock
from bot.memory.model import Memory
from bot.memory.service import Memories
from bot.storage.sqlite.store import SqliteStore

KEY = "bench:team:c1:t1"
OTHER = "bench:team:c2:t1"
VOCABULARY = 3000


def channel_of(key: str) -> str:
    return key.rsplit(":", 1)[0]


def words(rng: random.Random, count: int) -> list[str]:
    return [f"w{min(VOCABULARY - 1, int(rng.paretovariate(1.1)) - 1)}" for _ in range(count)]


async def fill(store: SqliteStore, key: str, count: int, rng: random.Random) -> Counter[str]:
    """Store ``count`` memories made in ``key``; how many notes hold each word."""
    channel = channel_of(key)
    seen: Counter[str] = Counter()
    for i in range(count):
        note = " ".join(words(rng, rng.randint(6, 24)))
        seen.update(set(note.split()))
        scope = "channel" if i % 3 else "thread"
        draft = Memory("", channel, key, scope, note, "bench:U1", "Alice", float(i))
        await store.add_memory(draft, per_channel=count + 1)
    return seen


async def timed(call: Callable[[], Awaitable[object]], rounds: int) -> list[float]:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        await call()
        times.append((time.perf_counter() - start) * 1000)
    return times


def report(name: str, times: list[float], found: int) -> None:
    print(
        f"{name:<34} p50 {percentile(times, 0.5):6.2f} ms  p95 {percentile(times, 0.95):6.2f} ms"
        f"  ({found} matches shown)"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            _env_file=None, data_dir=Path(tmp), memories_per_channel=args.memories + 1
        )
        store = SqliteStore(settings.database_path)
        await store.open()
        try:
            started = time.perf_counter()
            seen = await fill(store, KEY, args.memories, rng)
            await fill(store, OTHER, args.memories, rng)
            rare = next(w for w, n in sorted(seen.items()) if 3 <= n <= 6 and int(w[1:]) >= 300)
            common = seen.most_common(1)[0][0]
            filled = time.perf_counter() - started
            print(
                f"{2 * args.memories:,} memories stored in {filled:.1f} s "
                f"({filled / (2 * args.memories) * 1e6:.0f} µs each); {args.memories:,} in the channel measured"
            )
            memories = Memories(settings, store, SystemClock(), channel_of)
            for name, query in (
                (f"recall a rare word (in {seen[rare]} notes)", rare),
                (f"recall a common word (in {seen[common]:,})", common),
                ("recall two words", "w1 w5"),
                ("recall a word prefix (w12*)", "w12"),
            ):
                found = len(await memories.recall(KEY, query))
                report(
                    name, await timed(lambda q=query: memories.recall(KEY, q), args.queries), found
                )
            notes = await memories.notes(KEY)
            report(
                "memory note before a model call",
                await timed(lambda: memories.notes(KEY), args.queries),
                sum(line.startswith("- m") for n in notes for line in n.text.splitlines()),
            )
        finally:
            await store.close()


if __name__ == "__main__":
    asyncio.run(main())
