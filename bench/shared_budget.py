"""Several workers on one PostgreSQL database streaming in one Slack workspace: the shared edit
budget.

For 2 and 4 workers (``--workers``), each worker is a whole runtime (core on PostgreSQL, Slack
adapter, slack-bolt in Socket Mode, slack_sdk), and the fake Slack hands the mentions to the
workers' connections in turn: ``--threads`` threads per worker, all mentioned at the same
moment, each answer ``--tokens`` tokens streamed at ``--rate`` tokens a second. The fake answers
429 beyond ``chat.update``'s 50 calls a minute for the workspace (a sliding window).

Time runs ``--scale`` times faster everywhere (the fake's windows, the adapters' budget and
edit interval, the model's pace); figures are in Slack time. Prints, per worker count: the
``chat.update`` calls a minute that went through over the run, the calls sent in the busiest
minute (429s included; limit 50), the 429s per
method, and the lag from an answer's last token to its exact final text in the thread
(p50/p95), and the database calls for slots per paced call. ``--compare`` also runs each worker count with every worker pacing alone (as before
the budget was shared) to show what sharing changes.

    python -m bench.shared_budget [--workers 2 4] [--threads 20] [--tokens 300] [--rate 4]
        [--scale 10] [--compare]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import secrets
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adapters.platforms import Platforms
from adapters.runtime import Runtime
from adapters.slack.config import SlackSettings
from bench.slack_stream import PacedModel, done, final_shown_at
from bench.stats import POSTGRES, admin, percentile
from bot.config import Settings
from bot.infra import metrics
from tests.fakes.slack import MENTION, FakeSlack, Message

CHANNELS = 40
"""Mentions spread over this many channels, so that posting (about one a second per channel) is
not what the figures measure."""


async def run(
    url: str, workers: int, threads: int, tokens: int, rate: float, scale: float, shared: bool
) -> None:
    fake = FakeSlack(time_scale=scale)
    fake.socket.spread = True
    for c in range(CHANNELS):
        fake.add_channel(f"CBENCH{c:02d}", f"bench-{c}")
    await fake.start()
    models = [PacedModel(tokens, rate * scale) for _ in range(workers)]
    defaults = SlackSettings.model_fields
    slack = SlackSettings(
        **fake.settings(),
        slack_edits_per_minute=defaults["slack_edits_per_minute"].default * scale,
        slack_min_edit_interval=defaults["slack_min_edit_interval"].default / scale,
        slack_streaming="edit",
    )
    with tempfile.TemporaryDirectory() as data:
        async with AsyncExitStack() as stack:
            stack.push_async_callback(fake.stop)
            for n, model in enumerate(models):
                settings = Settings(
                    data_dir=Path(data) / f"w{n}",
                    http_port=0,
                    playground=False,
                    workspace_tools=False,
                    database_url=url,
                    worker_id=f"bench-w{n}",
                )
                runtime = Runtime(settings, platforms=Platforms(slack=slack), model=model)
                if not shared:  # every worker paces alone, as one process does
                    runtime.core.supervisor.budgets.shared = None
                await runtime.start()
                stack.push_async_callback(runtime.stop)
            calls_before = shared_calls()
            began = time.monotonic()
            roots = await mention_all(fake, workers * threads)
            last_tokens: dict[str, float] = {}

            def all_done() -> bool:
                for model in models:
                    last_tokens.update(model.last_token)
                return all(
                    tag in last_tokens and done_by(fake, models, roots[tag], tag) for tag in roots
                )

            await fake.wait_for(all_done, 3600)
            ended = time.monotonic()
            calls = {k: v - calls_before[k] for k, v in shared_calls().items()}
    report(fake, models, roots, last_tokens, workers, threads, scale, ended - began, shared)
    if shared:
        paced = sum(
            fake.limits.allowed[m] + fake.limits.rejected[m] for m in ("chat.update", "chat.delete")
        )
        print(
            f"  database calls for slots: {sum(calls.values()):.0f} "
            f"({', '.join(f'{k} {v:.0f}' for k, v in calls.items())}), "
            f"{sum(calls.values()) / max(1, paced):.2f} per chat.update or chat.delete"
        )


def shared_calls() -> dict[str, float]:
    return {
        outcome: metrics.REGISTRY.get_sample_value(
            "threadline_shared_edit_budget_calls_total", {"outcome": outcome}
        )
        or 0.0
        for outcome in ("granted", "later", "failed")
    }


def done_by(fake: FakeSlack, models: list[PacedModel], root: Message, tag: str) -> bool:
    return done(fake, models[0], (root, 0.0), tag)  # every model answers a tag alike


async def mention_all(fake: FakeSlack, threads: int) -> dict[str, Message]:
    async def one(i: int) -> tuple[str, Message]:
        tag = f"thread-{i:03d}"
        return tag, await fake.say("UADA", f"CBENCH{i % CHANNELS:02d}", f"{MENTION} {tag}")

    return dict(await asyncio.gather(*(one(i) for i in range(threads))))


def report(
    fake: FakeSlack,
    models: list[PacedModel],
    roots: dict[str, Message],
    last_tokens: dict[str, float],
    workers: int,
    threads: int,
    scale: float,
    seconds: float,
    shared: bool,
) -> None:
    updates = sorted(
        c.at for c in fake.api.calls if c.method == "chat.update" and c.outcome == "ok"
    )
    sent = sorted(c.at for c in fake.api.calls if c.method == "chat.update")  # 429s too
    window = 60.0 / scale
    busiest = max(
        (sum(1 for t in sent[i:] if t < start + window) for i, start in enumerate(sent)), default=0
    )
    minutes = seconds * scale / 60.0
    lag = []
    for tag, root in roots.items():
        landed = final_shown_at(fake, models[0], root, tag)
        assert landed is not None
        lag.append((landed - last_tokens[tag]) * scale)
    answered = [sum(1 for _ in model.last_token) for model in models]
    limits = fake.limits
    rejected = ", ".join(f"{m} {n}" for m, n in sorted(limits.rejected.items())) or "none"
    print(
        f"{workers} workers ({'shared budget' if shared else 'each pacing alone'}), {threads} threads each "
        f"(answered per worker: {answered}), {minutes:.1f} Slack minutes"
    )
    print(
        f"  chat.update: {len(updates) / minutes:.1f} a minute went through over the run, {busiest} sent "
        f"in the busiest minute (limit 50); 429s: {rejected}; Retry-After violations: "
        f"{sum(limits.violations.values())}"
    )
    print(
        f"  last token -> exact final text: p50 {percentile(lag, 0.5):.1f} s, p95 {percentile(lag, 0.95):.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--threads", type=int, default=20, help="threads per worker")
    parser.add_argument("--tokens", type=int, default=300)
    parser.add_argument("--rate", type=float, default=4.0, help="tokens a second per answer")
    parser.add_argument("--scale", type=float, default=10.0, help="how much faster time runs")
    parser.add_argument(
        "--compare", action="store_true", help="also run with every worker pacing alone"
    )
    parser.add_argument(
        "--postgres",
        default=POSTGRES,
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    for shared in (True, False) if args.compare else (True,):
        for workers in args.workers:
            name = f"threadline_bench_{secrets.token_hex(4)}"
            asyncio.run(admin(args.postgres, f'CREATE DATABASE "{name}"'))
            try:
                url = args.postgres.rsplit("/", 1)[0] + f"/{name}"
                asyncio.run(
                    run(url, workers, args.threads, args.tokens, args.rate, args.scale, shared)
                )
            finally:
                asyncio.run(admin(args.postgres, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


if __name__ == "__main__":
    main()
