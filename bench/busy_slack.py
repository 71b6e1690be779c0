"""The real ``threadline run`` in a busy Slack workspace, in real time: 20 threads in 5 channels
mentioned at once, on the fake Slack with Slack's tiers (``chat.update`` 50 a minute for the
workspace, ``chat.postMessage`` five in any five seconds per channel), answered by the offline
demo model streaming at ``--chunk-delay``.

Prints the time from each mention to the first words of its answer in the thread (p50/p95),
the threads where another message (a draft, a "Working…" message) stayed beside the answer's
final text for more than 2 s (and the longest stay; never deleted counts as forever), the 429s
and the calls made while a ``Retry-After`` ran. ``--workers 2`` runs two processes on a fresh
PostgreSQL database; ``--rounds`` repeats it and prints the medians. ``--scale`` runs the fake's
windows (and the budgets the workers are told) that much faster, the demo model not: more
answers overlap, and figures are in Slack seconds.

    python -m bench.busy_slack [--threads 20] [--channels 5] [--workers 1] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import secrets
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.stats import percentile
from bench.workers import _admin
from tests.e2e.test_process_restart import free_port, threadline
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, MENTION, FakeSlack, Message

BESIDE_S = 2.0
WAIT_S = 300.0


@dataclass
class Round:
    first_p50: float
    first_p95: float
    late: int
    longest: float
    rejected: int
    violations: int


def posted(slack: FakeSlack, root: Message) -> list[Message]:
    """Every message the bot posted in the thread, deleted ones too."""
    return [
        m
        for m in slack.workspace.messages.values()
        if m.channel == root.channel and m.thread_ts == root.ts and m.bot_id
    ]


def answer_of(slack: FakeSlack, root: Message) -> Message | None:
    """The message with the demo model's whole answer, once nothing streams any more."""
    done = [
        m
        for m in posted(slack, root)
        if not m.deleted and not m.streaming and "offline demo model" in m.shown
    ]
    return done[0] if done else None


def first_words(slack: FakeSlack, root: Message) -> float:
    return min(
        at
        for m in posted(slack, root)
        for shown, at in zip(m.versions, m.version_times, strict=True)
        if shown.strip() and "Working…" not in shown
    )


def beside(slack: FakeSlack, root: Message, answer: Message) -> float:
    """How long the last other message of the thread stayed after the answer's final text."""
    final_at = answer.version_times[-1]
    stays = [
        math.inf if m.deleted_at is None else max(0.0, m.deleted_at - final_at)
        for m in posted(slack, root)
        if m is not answer
    ]
    return max(stays, default=0.0)


async def one_round(args: argparse.Namespace, home: Path, url: str | None) -> Round:
    scale = args.scale
    slack = FakeSlack(time_scale=scale)
    slack.socket.spread = args.workers > 1
    channels = [f"CBUSY{n}" for n in range(args.channels)]
    for n, channel in enumerate(channels):
        slack.add_channel(channel, f"busy-{n}")
    await slack.start()
    settings = {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_APP_TOKEN": APP_TOKEN,
        "SLACK_API_URL": slack.api_url,
        "THREADLINE_PLAYGROUND": "true",
        "THREADLINE_DEMO_CHUNK_DELAY_S": str(args.chunk_delay),
        **({"THREADLINE_DATABASE_URL": url} if url else {}),
    }
    if scale != 1.0:  # the workers told the scaled budgets, as an operator would set them
        settings |= {
            "THREADLINE_SLACK_EDITS_PER_MINUTE": str(48 * scale),
            "THREADLINE_SLACK_MIN_EDIT_INTERVAL": str(1 / scale),
            "THREADLINE_SLACK_POSTS_PER_MINUTE": str(45 * scale),
            "THREADLINE_SLACK_STREAM_STARTS_PER_MINUTE": str(15 * scale),
            "THREADLINE_SLACK_STREAM_APPENDS_PER_MINUTE": str(80 * scale),
        }
    try:
        async with AsyncExitStack() as stack:
            for n in range(args.workers):
                where = home / f"worker{n}"
                where.mkdir()
                await stack.enter_async_context(
                    threadline(where, free_port(), THREADLINE_WORKER_ID=f"busy{n}", **settings)
                )
            await slack.wait_for(lambda: len(slack.socket.connections) == args.workers, 60)
            said, roots = [], []
            for n in range(args.threads):
                said.append(time.monotonic())
                channel = channels[n % len(channels)]
                roots.append(await slack.say("UADA", channel, f"{MENTION} tell me about busy {n}"))
            await slack.wait_for(lambda: all(answer_of(slack, r) for r in roots), WAIT_S)
            settled = time.monotonic() + 20.0  # drafts a slow sweep deletes later still count
            await slack.wait_for(
                lambda: (
                    time.monotonic() > settled
                    or all(
                        beside(slack, r, a) < math.inf
                        for r in roots
                        if (a := answer_of(slack, r)) is not None
                    )
                ),
                30.0,
            )
    finally:
        await slack.stop()
    firsts = [(first_words(slack, r) - at) * scale for r, at in zip(roots, said, strict=True)]
    stays = [beside(slack, r, a) * scale for r in roots if (a := answer_of(slack, r)) is not None]
    return Round(
        percentile(firsts, 0.5),
        percentile(firsts, 0.95),
        sum(s > BESIDE_S for s in stays),
        max(stays, default=0.0),
        sum(slack.limits.rejected.values()),
        sum(slack.limits.violations.values()),
    )


async def main_async(args: argparse.Namespace) -> None:
    rounds = []
    for n in range(args.rounds):
        with tempfile.TemporaryDirectory() as home:
            if args.workers > 1:
                name = f"threadline_bench_{secrets.token_hex(4)}"
                await _admin(args.postgres, f'CREATE DATABASE "{name}"')
                try:
                    url = args.postgres.rsplit("/", 1)[0] + f"/{name}"
                    got = await one_round(args, Path(home), url)
                finally:
                    await _admin(args.postgres, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            else:
                got = await one_round(args, Path(home), None)
        rounds.append(got)
        print(
            f"round {n + 1}: first words p50 {got.first_p50:.2f} s, p95 {got.first_p95:.2f} s; "
            f"threads with another message beside the answer > {BESIDE_S:g} s: {got.late} of "
            f"{args.threads} (longest {got.longest:.1f} s); 429s {got.rejected}, calls during a "
            f"Retry-After {got.violations}",
            flush=True,
        )

    def median(values: list[float]) -> float:
        return statistics.median(values)

    print(
        f"{args.threads} threads in {args.channels} channels, {args.workers} worker(s), medians "
        f"of {len(rounds)} rounds: first words p50 {median([r.first_p50 for r in rounds]):.2f} s, "
        f"p95 {median([r.first_p95 for r in rounds]):.2f} s; threads with a message beside the "
        f"answer > {BESIDE_S:g} s: {median([r.late for r in rounds]):g}, longest "
        f"{median([r.longest for r in rounds]):.1f} s; 429s {median([r.rejected for r in rounds]):g}"
        f", calls during a Retry-After {median([r.violations for r in rounds]):g}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--postgres",
        default=os.environ.get(
            "THREADLINE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument("--threads", type=int, default=20)
    parser.add_argument("--channels", type=int, default=5)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chunk-delay", type=float, default=0.05)
    parser.add_argument(
        "--scale", type=float, default=1.0, help="time runs this much faster (figures in Slack s)"
    )
    args = parser.parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
