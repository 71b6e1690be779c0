"""Two workers on one PostgreSQL database in a quiet Slack workspace: does anything pace them
when nothing is busy?

Two whole runtimes (core on PostgreSQL, Slack adapter, slack-bolt in Socket Mode, slack_sdk)
share one fresh database and one fake Slack with Slack's tiers, in real time. ``--threads``
people mention the bot at once in one channel; once every thread has its answer, each writes a
follow-up in its thread. Answers are ``--tokens`` tokens at ``--rate`` a second, streamed as
``THREADLINE_SLACK_STREAMING`` says (``auto`` by default: natively when a stream can start at
once). No rate limit is injected. ``--alone`` runs the same case on one worker (SQLite), the
figure two workers should match.

Prints, per round: the time from each message to its exact answer in the thread (first
messages and follow-ups: median and max), the follow-ups that waited more than 20 s, the time
from the first mention to the last follow-up's answer, and the 429s. ``--rounds`` repeats it, a fresh database each time; the last line gives the medians over
the rounds.

    python -m bench.quiet_workers [--threads 8] [--tokens 20] [--rate 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
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

from adapters.platforms import Platforms
from adapters.runtime import Runtime
from adapters.slack.config import SlackSettings
from bench.slack_stream import PacedModel, done
from bench.workers import _admin
from bot.config import Settings
from tests.fakes.slack import MENTION, FakeSlack, Message

CHANNEL = "CQUIET"
SLOW_S = 20.0
"""A follow-up answered later than this waited on something."""


@dataclass
class Round:
    firsts: list[float]
    follow_ups: list[float]
    rejected: int
    total: float
    """Seconds from the first mention to the last follow-up's answer."""


async def answer_times(
    fake: FakeSlack, model: PacedModel, asked: dict[str, tuple[Message, float]]
) -> list[float]:
    """Seconds from each message to its exact answer in its thread (waits for all of them)."""
    answered: dict[str, float] = {}

    def all_done() -> bool:
        now = time.monotonic()
        for tag, (root, _) in asked.items():
            if tag not in answered and done(fake, model, (root, 0.0), tag):
                answered[tag] = now
        return len(answered) == len(asked)

    await fake.wait_for(all_done, 600)
    return [answered[tag] - at for tag, (_, at) in asked.items()]


async def one_round(
    url: str | None, threads: int, tokens: int, rate: float, streaming: str
) -> Round:
    """One round: two workers on the database at ``url``, or one alone on SQLite (None)."""
    workers = 1 if url is None else 2
    fake = FakeSlack()
    fake.socket.spread = fake.socket.by_thread = True  # both workers answer threads
    fake.add_channel(CHANNEL, "quiet")
    await fake.start()
    model = PacedModel(tokens, rate)
    slack = SlackSettings(**fake.settings(), slack_streaming=streaming)
    with tempfile.TemporaryDirectory() as data:
        async with AsyncExitStack() as stack:
            stack.push_async_callback(fake.stop)
            for n in range(workers):
                settings = Settings(
                    data_dir=Path(data) / f"w{n}",
                    http_port=0,
                    playground=False,
                    workspace_tools=False,
                    database_url=url,
                    worker_id=f"quiet-w{n}",
                )
                runtime = Runtime(settings, platforms=Platforms(slack=slack), model=model)
                await runtime.start()
                stack.push_async_callback(runtime.stop)
            await fake.wait_for(lambda: len(fake.socket.connections) == workers, 30)
            firsts: dict[str, tuple[Message, float]] = {}
            began = time.monotonic()
            for i in range(threads):
                tag = f"thread-{i:02d}"
                at = time.monotonic()
                firsts[tag] = (await fake.say("UADA", CHANNEL, f"{MENTION} {tag}"), at)
            first_times = await answer_times(fake, model, firsts)
            follow_ups: dict[str, tuple[Message, float]] = {}
            for tag, (root, _) in firsts.items():
                at = time.monotonic()
                await fake.say("UADA", CHANNEL, f"{tag} again", thread_ts=root.ts)
                follow_ups[f"{tag} again"] = (root, at)
            follow_times = await answer_times(fake, model, follow_ups)
            ended = max(
                at + t for (_, at), t in zip(follow_ups.values(), follow_times, strict=True)
            )
    return Round(first_times, follow_times, sum(fake.limits.rejected.values()), ended - began)


async def fresh_database(admin: str) -> tuple[str, str]:
    name = f"threadline_bench_{secrets.token_hex(4)}"
    await _admin(admin, f'CREATE DATABASE "{name}"')
    return name, admin.rsplit("/", 1)[0] + f"/{name}"


async def main_async(args: argparse.Namespace) -> None:
    rounds: list[Round] = []
    for n in range(args.rounds):
        if args.alone:
            got = await one_round(None, args.threads, args.tokens, args.rate, args.streaming)
        else:
            name, url = await fresh_database(args.postgres)
            try:
                got = await one_round(url, args.threads, args.tokens, args.rate, args.streaming)
            finally:
                await _admin(args.postgres, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        rounds.append(got)
        slow = sum(t > SLOW_S for t in got.follow_ups)
        print(
            f"round {n + 1}: first answers median {statistics.median(got.firsts):.2f} s, "
            f"max {max(got.firsts):.2f} s; follow-ups median {statistics.median(got.follow_ups):.2f}"
            f" s, max {max(got.follow_ups):.2f} s, {slow} over {SLOW_S:g} s; all answered after "
            f"{got.total:.2f} s; 429s {got.rejected}",
            flush=True,
        )
    print(
        f"{args.threads} threads in one channel, "
        f"{'one worker alone (SQLite)' if args.alone else 'two workers'}, {args.tokens} tokens at "
        f"{args.rate:g}/s, streaming {args.streaming}: medians over {len(rounds)} rounds: "
        f"first-answer max {statistics.median(max(r.firsts) for r in rounds):.2f} s, "
        f"follow-up max {statistics.median(max(r.follow_ups) for r in rounds):.2f} s, "
        f"follow-up median {statistics.median(statistics.median(r.follow_ups) for r in rounds):.2f} s"
        f", all answered after {statistics.median(r.total for r in rounds):.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--postgres",
        default=os.environ.get(
            "THREADLINE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=20)
    parser.add_argument("--rate", type=float, default=20.0, help="tokens a second per answer")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--streaming", choices=["auto", "native", "edit"], default="auto")
    parser.add_argument("--alone", action="store_true", help="one worker on SQLite instead")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
