"""A 429 across concurrent streams: does any stream call a method Slack has just paused?

Each round starts the whole runtime in Slack HTTP mode (signed events to ``/slack/events``,
slack-bolt, slack_sdk) on the fake Slack with its tiers, mentions the bot in ``--threads``
threads of one channel at the same moment, and makes the first call of ``--method``
(``chat.postMessage``) after the mentions answer 429 with ``--retry-after`` seconds. Every answer streams (the model's tokens
come every 20 ms), natively where ``--streaming`` allows it. The fake records a *violation*
for every call of a method in a scope (the channel for ``chat.postMessage``, the workspace for
the rest) made before an earlier 429's ``Retry-After`` there has run out.

Prints the rounds with a violation, the violations per method over all rounds, and how long the
last answer took after the mentions (p50 over rounds; a round not answered within ``WITHIN``
counts as infinitely long).

    python -m bench.retry_after [--rounds 20] [--threads 3] [--retry-after 0.3] [--streaming edit]
        [--method chat.postMessage]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.platforms import Platforms
from adapters.runtime import Runtime
from adapters.slack.config import SlackSettings
from bench.slack_stream import PacedModel, done
from bot.config import Settings
from tests.fakes.slack import MENTION, FakeSlack

CHANNEL = "CGENERAL"
WITHIN = 20.0
"""A round whose answers are not all shown by then counts as not answered."""


async def one_round(
    threads: int, retry_after: float, streaming: str, method: str
) -> tuple[Counter[str], float]:
    fake = FakeSlack(mode="http")
    await fake.start()
    model = PacedModel(tokens=20, rate=50.0)
    with tempfile.TemporaryDirectory() as data:
        settings = Settings(
            data_dir=Path(data), http_port=0, playground=False, workspace_tools=False
        )
        slack = SlackSettings(**fake.settings(), slack_streaming=streaming)
        runtime = Runtime(settings, platforms=Platforms(slack=slack), model=model)
        await runtime.start()
        fake.http_target = f"{runtime.url}/slack/events"
        try:
            fake.limits.storm(method, 1, retry_after)
            began = time.monotonic()
            roots = await asyncio.gather(
                *(fake.say("UADA", CHANNEL, f"{MENTION} round t{n}") for n in range(threads))
            )
            tags = [f"round t{n}" for n in range(threads)]
            try:
                await fake.wait_for(
                    lambda: all(
                        done(fake, model, (r, 0.0), t) for r, t in zip(roots, tags, strict=True)
                    ),
                    WITHIN,
                )
                took = time.monotonic() - began
            except TimeoutError:
                took = math.inf
        finally:
            with contextlib.suppress(TimeoutError):  # a stream stuck in 429s may not end
                await asyncio.wait_for(runtime.stop(), 10)
            await fake.stop()
    return Counter(fake.limits.violations), took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--threads", type=int, default=3)
    parser.add_argument("--retry-after", type=float, default=0.3)
    parser.add_argument("--streaming", choices=["auto", "native", "edit"], default="edit")
    parser.add_argument("--method", default="chat.postMessage", help="the method answering 429")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    violations: Counter[str] = Counter()
    bad, took = 0, []
    for _ in range(args.rounds):
        found, seconds = asyncio.run(
            one_round(args.threads, args.retry_after, args.streaming, args.method)
        )
        violations += found
        bad += bool(found)
        took.append(seconds)
    print(
        f"{args.threads} answers at once in one channel, one {args.method} 429 "
        f"(Retry-After {args.retry_after:g} s), streaming {args.streaming}: rounds with a "
        f"violation {bad}/{args.rounds}; violations {dict(violations) or 0}; rounds not answered "
        f"within {WITHIN:g} s: {sum(t == math.inf for t in took)}; all answered "
        f"{statistics.median(took):.2f} s after the mentions (p50)"
    )


if __name__ == "__main__":
    main()
