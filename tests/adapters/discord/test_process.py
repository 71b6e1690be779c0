"""The real ``threadline run`` against the fake Discord, killed and started again: a message
posted while it was down is answered once it is back, and not again after the next restart."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bot.infra.clock import SystemClock
from tests.e2e.test_process_restart import free_port
from tests.fakes.discord import Channel, FakeDiscord, User

WAIT = 30.0
CAUGHT_UP = "caught up after a new Discord session"
RUN_ENDED = "ended: answered"


@dataclass
class Output:
    """What the process has written so far, line by line, and a wake-up on every line."""

    lines: list[str] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def until(self, match: Callable[[str], bool]) -> str:
        async with asyncio.timeout(WAIT):
            seen = 0
            while True:
                for line in self.lines[seen:]:
                    if match(line):
                        return line
                seen = len(self.lines)
                self.changed.clear()
                await self.changed.wait()


async def _read(stream: asyncio.StreamReader, output: Output) -> None:
    while line := await stream.readline():
        output.lines.append(line.decode(errors="replace"))
        output.changed.set()


@asynccontextmanager
async def threadline(
    tmp_path: Path, fake: FakeDiscord, extra: dict[str, str] | None = None
) -> AsyncIterator[tuple[asyncio.subprocess.Process, Output]]:
    """``threadline run`` with a Discord token for ``fake`` and the offline demo model (and the
    ``extra`` environment)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "SLACK_", "DISCORD_", "THREADLINE_"))
    }
    env |= {
        "DISCORD_TOKEN": fake.token,
        "DISCORD_API_BASE": fake.api_base,
        "DISCORD_GATEWAY_URL": fake.gateway_url,
        "THREADLINE_DATA_DIR": str(tmp_path / "data"),
        "THREADLINE_HTTP_PORT": str(free_port()),
        "THREADLINE_DEMO_CHUNK_DELAY_S": "0",
        "THREADLINE_WORKSPACE_TOOLS": "false",
        **(extra or {}),
    }
    sessions = len(fake.gateway.sessions)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        "run",
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert proc.stdout is not None
    output = Output()
    reader = asyncio.create_task(_read(proc.stdout, output))
    try:
        await fake.wait_for(
            lambda: len(fake.gateway.sessions) > sessions and fake.gateway.live_sessions(), WAIT
        )
        yield proc, output
    finally:
        if proc.returncode is None:
            proc.terminate()
            async with asyncio.timeout(WAIT):
                await proc.wait()
        async with asyncio.timeout(WAIT):
            await reader


def bot_messages(fake: FakeDiscord, thread: Channel) -> list[int]:
    return [m.id for m in fake.world.in_channel(thread.id) if m.author.id == fake.world.bot.id]


def settled(fake: FakeDiscord, thread: Channel, text: str) -> bool:
    """The answer to ``text`` is there and its run is over (its plan done and unpinned)."""
    return bool(answers_to(fake, thread, text)) and not fake.world.pinned(thread.id)


def answers_to(fake: FakeDiscord, thread: Channel, text: str) -> list[str]:
    """The bot's finished answers in ``thread`` that quote ``text`` (the demo model quotes what
    it answers; a reply loses its Stop button when its run ends)."""
    bot = fake.world.bot.id
    return [
        m.content
        for m in fake.world.in_channel(thread.id)
        if m.author.id == bot and f"> {text}" in m.content and not m.components
    ]


async def test_a_message_posted_while_threadline_was_down_is_answered_once(tmp_path: Path) -> None:
    fake = FakeDiscord(SystemClock())
    await fake.start()
    try:
        guild = fake.world.add_guild("Lab")
        channel = fake.world.add_channel(guild, "general")
        ada: User = fake.world.add_user("Ada", guild=guild)
        async with threadline(tmp_path, fake) as (first, output):
            asked = fake.say(channel, ada, f"<@{fake.world.bot.id}> first question")
            await fake.wait_for(lambda: fake.world.messages[asked.id].thread_id is not None, WAIT)
            thread = fake.world.channels[asked.id]
            await fake.wait_for(lambda: settled(fake, thread, "first question"), WAIT)
            await output.until(lambda line: RUN_ENDED in line)  # its last edit landed
            first.send_signal(signal.SIGKILL)
            await first.wait()

        fake.say(thread, ada, "sent while you were down")
        async with threadline(tmp_path, fake) as (_, output):
            second = output
            await fake.wait_for(lambda: settled(fake, thread, "sent while you were down"), WAIT)
            await output.until(lambda line: CAUGHT_UP in line)
            await output.until(lambda line: RUN_ENDED in line)
            posted = bot_messages(fake, thread)

        async with threadline(tmp_path, fake) as (_, output):
            line = await output.until(lambda line: CAUGHT_UP in line)
            assert "0 started an answer" in line
            assert bot_messages(fake, thread) == posted  # nothing new (edits may still land)
        assert len(answers_to(fake, thread, "sent while you were down")) == 1, "".join(second.lines)
        assert len(answers_to(fake, thread, "first question")) == 1
    finally:
        await fake.close()
