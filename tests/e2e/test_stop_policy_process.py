"""The real program on the fake Slack with ``[access] deny_users`` in threadline.toml: a denied
person's click on a run's Stop button is refused (a note only they see) and the run goes on,
until someone who may use the bot stops it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from bot.core import STOP_REFUSED
from tests.e2e.test_process_restart import free_port, threadline
from tests.fakes.openai_server import CutOff, FakeOpenAI, Reply
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, MENTION, FakeSlack, Message

WAIT = 30.0
TOML = '[access]\ndeny_users = ["slack:UGRACE"]\n'


async def test_a_denied_persons_stop_click_is_refused_by_the_real_program(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text(TOML)
    slack = FakeSlack()
    await slack.start()
    stall = asyncio.Event()
    try:
        async with FakeOpenAI() as model:
            model.push(
                CutOff(
                    Reply("Working on a long answer, part by part", text_chunk_chars=4),
                    6,
                    hold_until=stall,
                )
            )
            settings = {
                "OPENAI_BASE_URL": model.base_url,
                "OPENAI_API_KEY": "sk-test",
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_APP_TOKEN": APP_TOKEN,
                "SLACK_API_URL": slack.api_url,
                "THREADLINE_PLAYGROUND": "true",
                "THREADLINE_SLACK_STREAMING": "edit",  # the Stop button rides on the reply
            }
            async with threadline(tmp_path, free_port(), **settings), released(stall):
                await slack.wait_for(lambda: bool(slack.socket.connections), WAIT)
                root = await slack.say("UADA", "CGENERAL", f"{MENTION} a long answer, please")

                def with_stop() -> list[Message]:
                    return [
                        m
                        for m in slack.replies("CGENERAL", root.ts)
                        if any(b["text"]["text"] == "Stop" for b in m.buttons)
                    ]

                def shown() -> str:
                    return "\n".join(m.shown for m in slack.replies("CGENERAL", root.ts))

                await slack.wait_for(lambda: bool(with_stop()), WAIT)
                await slack.click("UGRACE", with_stop()[0], "Stop")
                await slack.wait_for(lambda: slack.ephemerals("UGRACE") == [STOP_REFUSED], WAIT)
                assert with_stop() and "Stopped by" not in shown()  # the run goes on

                await slack.click("UADA", with_stop()[0], "Stop")
                await slack.wait_for(lambda: "Stopped by Ada" in shown(), WAIT)
                assert slack.ephemerals("UADA") == []
    finally:
        await slack.stop()


@contextlib.asynccontextmanager
async def released(stall: asyncio.Event) -> AsyncIterator[None]:
    """Lets the stalled model answer end before the program and the fake model stop."""
    try:
        yield
    finally:
        stall.set()
