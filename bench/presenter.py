"""Streaming a long answer into one reply on a surface that allows one edit per second.

A 2,000-token answer (about 8,000 characters, ~4 characters a token) arrives at 50 tokens/s,
on the real clock, into a ReplyStream over the recording surface (max 4,000 characters a
message, one edit per second per message, 60 edits a minute, limits enforced with 429s).

Prints: calls made, time from the first token to the first visible text, and the lag from the
last token to the exact final text. Targets: first visible ≤ 1 s; final lag ≤ one edit interval.

    python -m bench.presenter [--tokens 2000] [--rate 50] [--latency 0.0]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.api.surface import SurfaceLimits
from bot.infra.clock import SystemClock
from bot.present.budget import EditBudget
from bot.present.reply import ReplyStream
from bot.present.split import split_message
from bot.sessions.model import LiveMessage
from tests.fakes.surface import RecordingSurface

LIMITS = SurfaceLimits(
    max_chars=4000, min_edit_interval=1.0, edits_per_minute=60, budget_key="bench"
)
WORDS = ["the", "stream", "edits", "one", "message", "while", "text", "arrives", "budget", "split"]


def answer(tokens: int, rng: random.Random) -> list[str]:
    """Tokens of about four characters: prose, with a code block in the middle."""
    out: list[str] = []
    for i in range(tokens):
        if i == tokens // 2:
            out.append("\n\n```python\n")
        elif tokens // 2 < i < tokens // 2 + 150:
            out.append(f"x{i % 10} " if i % 8 else "= 1\n")
        elif i == tokens // 2 + 150:
            out.append("\n```\n\n")
        elif i % 60 == 59:
            out.append(".\n\n")
        else:
            out.append(" " + rng.choice(WORDS)[:3])
    return out


async def run(tokens: int, rate: float, latency: float) -> None:
    clock = SystemClock()
    surface = RecordingSurface(clock, LIMITS, strict=True, latency=latency)
    posted: list[str] = []

    async def on_live(message_id: str, live: LiveMessage | None) -> None:
        if live is not None and message_id not in posted:
            posted.append(message_id)

    stream = ReplyStream(surface, clock, EditBudget(clock, LIMITS.edits_per_minute), on_live)
    pieces = answer(tokens, random.Random(7))
    append_cost = 0.0
    start = clock.monotonic()
    for i, piece in enumerate(pieces):
        t = time.perf_counter()
        stream.append(piece)
        append_cost += time.perf_counter() - t
        await asyncio.sleep(max(0.0, start + (i + 1) / rate - clock.monotonic()))
    last_token = start + (len(pieces) - 1) / rate
    last_token_real = clock.monotonic()
    await stream.finish()
    landed = clock.monotonic()

    text = "".join(pieces)
    exact = surface.texts() == split_message(text, LIMITS.max_chars)
    first_visible = next(c.at for c in surface.calls if c.op == "post" and c.outcome == "ok")
    print(
        f"answer: {len(pieces)} tokens, {len(text):,} chars, streamed at {rate:g} tokens/s "
        f"over {last_token_real - start:.1f} s; surface latency {latency * 1000:.0f} ms"
    )
    print(
        f"calls: {surface.count('post')} posts, {surface.edit_count()} edits, "
        f"{sum(1 for c in surface.calls if c.outcome != 'ok')} refused; messages: {len(surface.live())}"
    )
    print(
        f"first token -> first visible text: {(first_visible - start) * 1000:.1f} ms (target <= 1000)"
    )
    print(
        f"last token -> exact final text: {(landed - last_token) * 1000:.0f} ms "
        f"(target <= {LIMITS.min_edit_interval * 1000:.0f}); exact: {exact}"
    )
    print(
        f"append cost: {append_cost / len(pieces) * 1e6:.2f} us per token; 429 violations: "
        f"{surface.ledger.violations}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument(
        "--latency", type=float, default=0.0, help="seconds each platform call takes"
    )
    args = parser.parse_args()
    asyncio.run(run(args.tokens, args.rate, args.latency))


if __name__ == "__main__":
    main()
