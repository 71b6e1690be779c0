"""``/threadline`` on Slack: how fast a command is acknowledged and answered.

``--threads`` threads are opened in one channel (one mention each), then ``--commands``
``/threadline status`` commands are typed, ``--burst`` at a time, each naming a thread by its
link. Everything runs through the real runtime, core, SQLite store, Slack adapter, slack-bolt
and slack_sdk against the fake Slack, in Socket Mode or HTTP mode.

Prints the time from sending a command to Slack's acknowledgement (Slack wants 3 s) and to the
answer arriving at its ``response_url``, p50/p95/max, in milliseconds.

    python bench/slack_commands.py [--mode socket|http] [--threads 5] [--commands 200] [--burst 10]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Literal

sys.path.pop(0)  # bench/ itself: its mcp.py would hide the mcp package
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.platforms import Platforms
from adapters.runtime import Runtime
from adapters.slack.config import SlackSettings
from bench.stats import percentile
from bot.config import Settings
from tests.fakes.scripted_model import ScriptedModel, text
from tests.fakes.slack import MENTION, FakeSlack


async def main(mode: Literal["socket", "http"], threads: int, commands: int, burst: int) -> None:
    fake = FakeSlack(mode=mode)
    await fake.start()
    model = ScriptedModel([], respond=lambda request: text("ok"))
    with tempfile.TemporaryDirectory() as data:
        settings = Settings(
            data_dir=Path(data), http_port=0, playground=False, workspace_tools=False
        )
        runtime = Runtime(
            settings, platforms=Platforms(slack=SlackSettings(**fake.settings())), model=model
        )
        await runtime.start()
        if mode == "http":
            fake.http_target = f"{runtime.url}/slack/events"
        try:
            roots = [
                await fake.say("UADA", "CGENERAL", f"{MENTION} thread {n}") for n in range(threads)
            ]
            await fake.wait_for(lambda: all(fake.replies("CGENERAL", r.ts) for r in roots), 120)
            acked: list[float] = []
            answered: list[float] = []

            async def one(n: int) -> None:
                root = roots[n % threads]
                link = f"https://fake.slack.com/archives/CGENERAL/p{root.ts.replace('.', '')}"
                start = time.monotonic()
                call = await fake.slash("UGRACE", "CGENERAL", f"status {link}")
                assert call.delivery is not None and call.delivery.acked_at is not None
                acked.append(call.delivery.acked_at - start)
                await fake.wait_for(lambda: bool(call.answers), 60)
                answered.append(time.monotonic() - start)

            for first in range(0, commands, burst):
                await asyncio.gather(*(one(n) for n in range(first, min(commands, first + burst))))
        finally:
            await runtime.stop()
            await fake.stop()
    print(
        f"/threadline status on the fake Slack ({mode} mode): {commands} commands, {burst} at a time, {threads} threads"
    )
    for name, values in (("acknowledged", acked), ("answered", answered)):
        ms = [v * 1000 for v in values]
        print(
            f"  {name:>12}: p50 {percentile(ms, 0.5):.1f} ms, p95 {percentile(ms, 0.95):.1f} ms, max {max(ms):.1f} ms"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=["socket", "http"], default="socket")
    parser.add_argument("--threads", type=int, default=5)
    parser.add_argument("--commands", type=int, default=200)
    parser.add_argument("--burst", type=int, default=10)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main(args.mode, args.threads, args.commands, args.burst))
