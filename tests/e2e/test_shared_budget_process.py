"""Two real ``threadline run`` processes on one PostgreSQL database and one (fake) Slack
workspace, both streaming the demo model's answers in eight threads at once: every answer lands
whole, both workers answer, and the workspace's ``chat.update`` limit is never hit — the two
share its budget through the database. Eight threads in one channel: the channel's posts keep
its sliding window together (never more than four in four intervals, no 429).

Time in the fake runs ``SCALE`` times faster (Tier 3's 50 a minute become 50 every 3 s), and
the workers are told the same scaled budget, as an operator would set ``SLACK_EDITS_PER_MINUTE``.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.test_process_restart import free_port, threadline
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, MENTION, FakeSlack
from tests.postgres import fresh_schema, postgres_database

__all__ = ["postgres_database"]

SCALE = 20.0
WAIT = 60.0
CHANNELS = ("CSHARE0", "CSHARE1", "CSHARE2", "CSHARE3")


async def runs_started(http: aiohttp.ClientSession, port: int) -> float:
    async with http.get(f"http://127.0.0.1:{port}/metrics") as response:
        families = text_string_to_metric_families(await response.text())
        return sum(
            s.value for f in families if f.name == "threadline_runs_started" for s in f.samples
        )


async def test_two_processes_stream_in_one_workspace_within_its_edit_limit(
    tmp_path: Path, postgres_database: str
) -> None:
    url = await fresh_schema(postgres_database)
    slack = FakeSlack(time_scale=SCALE)
    slack.socket.spread = True  # each channel's events go to one of the two workers
    for n, channel in enumerate(CHANNELS):
        slack.add_channel(channel, f"share-{n}")
    await slack.start()
    settings = {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_APP_TOKEN": APP_TOKEN,
        "SLACK_API_URL": slack.api_url,
        "THREADLINE_PLAYGROUND": "true",
        "THREADLINE_DATABASE_URL": url,
        "THREADLINE_SLACK_EDITS_PER_MINUTE": str(48 * SCALE),
        "THREADLINE_SLACK_MIN_EDIT_INTERVAL": str(1 / SCALE),
        "THREADLINE_SLACK_STREAMING": "edit",
        "THREADLINE_DEMO_CHUNK_DELAY_S": "0.06",
    }
    ports = [free_port(), free_port()]
    try:
        async with AsyncExitStack() as stack:
            for n, port in enumerate(ports):
                home = tmp_path / f"worker{n}"
                home.mkdir()
                await stack.enter_async_context(
                    threadline(home, port, THREADLINE_WORKER_ID=f"worker{n}", **settings)
                )
            await slack.wait_for(lambda: len(slack.socket.connections) == 2, WAIT)
            roots = [
                await slack.say(
                    "UADA", CHANNELS[n % len(CHANNELS)], f"{MENTION} tell me about budget {n}"
                )
                for n in range(8)
            ]

            def answered() -> bool:
                return all(
                    any(
                        f"budget {n}" in m.shown and "offline demo model" in m.shown
                        for m in slack.replies(root.channel, root.ts)
                    )
                    for n, root in enumerate(roots)
                )

            await slack.wait_for(answered, WAIT)
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=WAIT)) as http:
                started = [await runs_started(http, port) for port in ports]
    finally:
        await slack.stop()
    assert all(count >= 1 for count in started), started  # both workers answered threads
    assert slack.limits.rejected["chat.update"] == 0
    assert slack.limits.violations["chat.update"] == 0
    assert slack.count("chat.update") > len(roots)  # the answers streamed


async def test_two_processes_post_in_one_channel_within_its_window(
    tmp_path: Path, postgres_database: str
) -> None:
    url = await fresh_schema(postgres_database)
    slack = FakeSlack(time_scale=SCALE)
    slack.socket.spread = slack.socket.by_thread = True  # both workers answer in the channel
    slack.add_channel("CONE", "one")
    await slack.start()
    posts_per_minute = 30 * SCALE  # four in any 0.4 s here (8 s unscaled, Slack allows 5 in 5 s)
    settings = {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_APP_TOKEN": APP_TOKEN,
        "SLACK_API_URL": slack.api_url,
        "THREADLINE_PLAYGROUND": "true",
        "THREADLINE_DATABASE_URL": url,
        "THREADLINE_SLACK_EDITS_PER_MINUTE": str(48 * SCALE),
        "THREADLINE_SLACK_POSTS_PER_MINUTE": str(posts_per_minute),
        "THREADLINE_SLACK_MIN_EDIT_INTERVAL": str(1 / SCALE),
        "THREADLINE_SLACK_STREAMING": "edit",
        "THREADLINE_DEMO_CHUNK_DELAY_S": "0.06",
    }
    ports = [free_port(), free_port()]
    try:
        async with AsyncExitStack() as stack:
            for n, port in enumerate(ports):
                home = tmp_path / f"worker{n}"
                home.mkdir()
                await stack.enter_async_context(
                    threadline(home, port, THREADLINE_WORKER_ID=f"worker{n}", **settings)
                )
            await slack.wait_for(lambda: len(slack.socket.connections) == 2, WAIT)
            roots = [await slack.say("UADA", "CONE", f"{MENTION} post {n}") for n in range(8)]

            def answered() -> bool:
                return all(
                    any(
                        f"post {n}" in m.shown and "offline demo model" in m.shown
                        for m in slack.replies(root.channel, root.ts)
                    )
                    for n, root in enumerate(roots)
                )

            await slack.wait_for(answered, WAIT)
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=WAIT)) as http:
                started = [await runs_started(http, port) for port in ports]
    finally:
        await slack.stop()
    assert all(count >= 1 for count in started), started  # both workers answered threads
    posted = sorted(c.at for c in slack.api.calls if c.method == "chat.postMessage")
    assert len(posted) >= len(roots)
    assert slack.limits.rejected["chat.postMessage"] == 0  # together within Slack's channel limit
    # (the window's exact spacing is checked on the database's grants in test_shared_budget.py:
    # posts' arrival times here move with the machine's load)
