"""The real ``threadline run`` against the fake Slack with native streaming: an answer streams
with chat.startStream and ends stopped; killed mid-stream (once the stream is recorded, as its
run's message) and started again, no stream is left open, what was streamed stays, and the
answer is not shown twice."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.e2e.test_process_restart import free_port, stop_recorded, until_true
from tests.fakes.slack import MENTION, FakeSlack, Message

WAIT = 30.0


@asynccontextmanager
async def threadline(
    tmp_path: Path, fake: FakeSlack, delay: str
) -> AsyncIterator[asyncio.subprocess.Process]:
    """``threadline run`` with Slack tokens for ``fake``, native streaming, the demo model."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "SLACK_", "DISCORD_", "THREADLINE_"))
    }
    env |= {name.upper(): value for name, value in fake.settings().items()}
    env |= {
        "THREADLINE_DATA_DIR": str(tmp_path / "data"),
        "THREADLINE_HTTP_PORT": str(free_port()),
        "THREADLINE_DEMO_CHUNK_DELAY_S": delay,
        "THREADLINE_WORKSPACE_TOOLS": "false",
        "THREADLINE_SLACK_STREAMING": "auto",
    }
    opened = fake.socket.opened
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        "run",
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        await fake.wait_for(
            lambda: fake.socket.opened > opened and bool(fake.socket.connections), WAIT
        )
        yield proc
    finally:
        if proc.returncode is None:
            proc.terminate()
            async with asyncio.timeout(WAIT):
                await proc.wait()


def bot_replies(fake: FakeSlack, root: Message) -> list[Message]:
    return [m for m in fake.replies(root.channel, root.ts) if m.bot_id]


def streamed(fake: FakeSlack) -> int:
    return sum(1 for c in fake.api.calls if c.method == "chat.startStream" and c.outcome == "ok")


async def test_an_answer_streams_natively_and_a_kill_mid_stream_leaves_none_open(
    tmp_path: Path,
) -> None:
    fake = FakeSlack()
    await fake.start()
    try:
        async with threadline(tmp_path, fake, "0") as _:
            root = await fake.say("UADA", "CGENERAL", f"{MENTION} hello there")
            await fake.wait_for(
                lambda: (
                    streamed(fake) == 1
                    and len(bot_replies(fake, root)) == 1  # the control message went with the run
                    and not any(m.streaming for m in bot_replies(fake, root))
                ),
                WAIT,
            )
            [answer] = bot_replies(fake, root)
            assert answer.shown.strip(), "the streamed answer shows its text"

        async with threadline(tmp_path, fake, "0.3") as proc:
            second = await fake.say("UADA", "CGENERAL", f"{MENTION} tell me more about yourself")
            await fake.wait_for(
                lambda: any(m.streaming and m.shown for m in bot_replies(fake, second)), WAIT
            )
            stream = next(m for m in bot_replies(fake, second) if m.streaming)
            await until_true(
                lambda: stop_recorded(tmp_path / "data" / "threadline.sqlite3", stream.ts)
            )
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        cut = next(m for m in bot_replies(fake, second) if m.streaming)
        partial = cut.shown

        async with threadline(tmp_path, fake, "0"):
            await fake.wait_for(
                lambda: not cut.streaming and len(bot_replies(fake, second)) >= 2, WAIT
            )
            assert cut.shown.startswith(partial.strip()), "what was streamed stays"
            texts = [m.shown for m in bot_replies(fake, second) if m.shown.strip()]
            assert len(texts) == len(set(texts)), "nothing is shown twice"
    finally:
        await fake.stop()
