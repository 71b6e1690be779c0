"""A worker SIGKILLed mid-answer, as an operator sees it: two real ``threadline run`` processes on
one PostgreSQL database and the fake Slack; how long until the other worker goes on with the
answer?

Each round: worker ``b`` starts, then ``a`` (Slack hands the events to the newest connection, so
``a`` gets the mention); the model's first call (``a``'s) is held; after a random part of the
lease's renewal interval (a kill lands at any moment of it), ``a`` is SIGKILLed. Measured from
the kill: the other worker's model call (the takeover) and the answer shown in the thread. Each
round uses a fresh schema; the workers run with the default lease time and poll unless given.

``--code DIR`` (repeatable) runs the workers from that source tree (their ``PYTHONPATH``): with
two trees the rounds alternate between them (interleaved, so a shared machine's load falls on
both alike), and each tree's medians are printed.

    python bench/takeover.py [--rounds 6] [--code /path/before --code /path/after]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.stats import POSTGRES, admin, p95
from bot.config import Settings
from tests.e2e.workers import WAIT, worker
from tests.fakes.openai_server import Delay, FakeOpenAI, Reply
from tests.fakes.slack import MENTION, FakeSlack

CHANNEL = "CGENERAL"
ANSWER = "The incident came from a full disk."


def _shown(slack: FakeSlack, root_ts: str) -> str:
    return "\n".join(m.shown for m in slack.replies(CHANNEL, root_ts) if not m.deleted)


async def one_round(url: str, code: str, ttl_s: float, poll_s: float) -> tuple[float, float]:
    """(kill -> the other worker's model call, kill -> the answer shown), in seconds."""
    schema = f"b_{secrets.token_hex(6)}"
    await admin(url, f'CREATE SCHEMA "{schema}"')
    scoped = f"{url}?search_path={schema}"
    env = {
        "PYTHONPATH": code,
        "THREADLINE_LEASE_TTL_S": f"{ttl_s:g}",
        "THREADLINE_WORKER_POLL_S": f"{poll_s:g}",
    }
    home = Path(tempfile.mkdtemp(prefix="threadline-takeover-"))
    slack = FakeSlack()
    await slack.start()
    gate = asyncio.Event()
    try:
        async with FakeOpenAI() as model:
            model.push(Delay(Reply("never sent"), until=gate), Reply(ANSWER))
            try:
                async with (
                    worker(home, "b", scoped, slack, model.base_url, **env),
                    worker(home, "a", scoped, slack, model.base_url, **env) as a,
                ):
                    root = await slack.say("UADA", CHANNEL, f"{MENTION} summarise the incident")
                    await model.wait_for_requests(1, within=WAIT)  # a's call, held
                    await asyncio.sleep(random.uniform(0.0, ttl_s / 3))
                    await a.kill()
                    killed = time.monotonic()
                    await model.wait_for_requests(2, within=WAIT + ttl_s)
                    resumed = model.requests[1].received_at - killed
                    await slack.wait_for(lambda: ANSWER in _shown(slack, root.ts), WAIT)
                    shown = time.monotonic() - killed
            finally:
                gate.set()
    finally:
        await slack.stop()
        await admin(url, f'DROP SCHEMA "{schema}" CASCADE')
    return resumed, shown


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--postgres",
        default=POSTGRES,
    )
    parser.add_argument("--rounds", type=int, default=6, help="rounds per source tree")
    parser.add_argument("--code", action="append", help="a source tree to run the workers from")
    parser.add_argument(
        "--lease-ttl", type=float, default=Settings.model_fields["lease_ttl_s"].default
    )
    parser.add_argument(
        "--poll", type=float, default=Settings.model_fields["worker_poll_s"].default
    )
    args = parser.parse_args()
    logging.getLogger("aiohttp").setLevel(logging.CRITICAL)  # the killed worker's held call
    codes = args.code or [str(Path(__file__).resolve().parent.parent)]
    asyncio.run(rounds(args, codes))


async def rounds(args: argparse.Namespace, codes: list[str]) -> None:
    name = f"threadline_bench_{secrets.token_hex(4)}"
    await admin(args.postgres, f'CREATE DATABASE "{name}"')
    url = args.postgres.rsplit("/", 1)[0] + f"/{name}"
    figures: dict[str, list[tuple[float, float]]] = {code: [] for code in codes}
    try:
        for n in range(args.rounds):
            for code in codes:
                resumed, shown = await one_round(url, code, args.lease_ttl, args.poll)
                figures[code].append((resumed, shown))
                print(f"round {n + 1} {code}: resumed {resumed:.2f} s, shown {shown:.2f} s")
    finally:
        await admin(args.postgres, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    print(
        f"a worker SIGKILLed mid-answer, two threadline run processes (lease {args.lease_ttl:g} s,"
        f" poll {args.poll:g} s), {args.rounds} interleaved rounds each, {os.cpu_count()} cores:"
    )
    for code, found in figures.items():
        resumed = [r for r, _ in found]
        shown = [s for _, s in found]
        print(
            f"  {code}: kill -> other worker's model call p50 {statistics.median(resumed):.2f} s,"
            f" p95 {p95(resumed):.2f} s; kill -> answer shown p50 {statistics.median(shown):.2f} s,"
            f" p95 {p95(shown):.2f} s, max {max(shown):.2f} s"
        )


if __name__ == "__main__":
    main()
