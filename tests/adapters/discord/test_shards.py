"""Two real ``threadline run`` processes share a bot's Discord shards: each identifies only the
shard it was given, gets only its servers' events, and answers there (its ``/metrics`` say so)."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from bot.infra.clock import SystemClock
from tests.adapters.discord.test_process import WAIT, answers_to, threadline
from tests.e2e.test_process_restart import free_port
from tests.fakes.discord import FakeDiscord

THREADS = ("discord", "POST /channels/{id}/messages/{id}/threads", "ok")
"""A thread opened from a mention in a channel: one per answered mention."""


async def requests_made(port: int) -> dict[tuple[str, str, str], float]:
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{port}/metrics") as response,
    ):
        assert response.status == 200
        text = await response.text()
    return {
        (s.labels["platform"], s.labels["method"], s.labels["outcome"]): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "threadline_platform_requests_total"
    }


async def test_each_process_identifies_only_its_shard_and_answers_only_its_servers(
    tmp_path: Path,
) -> None:
    fake = FakeDiscord(SystemClock())
    await fake.start()
    try:
        world = fake.world
        guilds = [world.add_guild(f"Lab {n}", shard=(n, 2)) for n in (0, 1)]
        channels = [world.add_channel(guild, "general") for guild in guilds]
        people = [
            world.add_user(name, guild=guild)
            for name, guild in zip(("Ada", "Bob"), guilds, strict=True)
        ]
        ports = [free_port(), free_port()]
        workers = []
        for n in (0, 1):
            home = tmp_path / f"worker-{n}"
            home.mkdir()
            env = {
                "THREADLINE_DISCORD_SHARD_COUNT": "2",
                "THREADLINE_DISCORD_SHARD_IDS": str(n),
                "THREADLINE_HTTP_PORT": str(ports[n]),
            }
            workers.append(threadline(home, fake, env))
        async with workers[0] as (_, first), workers[1] as (_, second):
            await fake.wait_for(lambda: len(fake.gateway.live_sessions()) == 2, WAIT)
            assert sorted(s.shard for s in fake.gateway.sessions.values() if s.shard) == [
                (0, 2),
                (1, 2),
            ]
            assert len(fake.gateway.sessions) == 2  # nobody identified a shard that is not theirs
            await first.until(lambda line: "connecting shard 0 of 2" in line)
            await second.until(lambda line: "connecting shard 1 of 2" in line)

            asked = [
                fake.say(channel, person, f"<@{world.bot.id}> hello from {guild.name}")
                for channel, person, guild in zip(channels, people, guilds, strict=True)
            ]
            await fake.wait_for(lambda: all(world.messages[m.id].thread_id for m in asked), WAIT)
            threads = [world.channels[m.id] for m in asked]
            for thread, guild in zip(threads, guilds, strict=True):
                await fake.wait_for(
                    lambda t=thread, g=guild: answers_to(fake, t, f"hello from {g.name}"), WAIT
                )
            made = [await requests_made(port) for port in ports]

        for thread, guild in zip(threads, guilds, strict=True):
            assert len(answers_to(fake, thread, f"hello from {guild.name}")) == 1
        assert [m.get(THREADS, 0.0) for m in made] == [
            1.0,
            1.0,
        ]  # each opened its own server's thread
    finally:
        await fake.close()
