"""The real program on the fake Slack and the fake Discord: Stop is one click away for a whole
run — on the reply, or beside a native stream on a control message — from its first second,
even when the model sends nothing; and killed mid-answer, the program started again leaves no
Stop button and no open stream behind."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from bot.core import STOP_REFUSED
from bot.infra.clock import SystemClock
from tests.adapters.discord.test_process import threadline as discord_threadline
from tests.e2e.test_process_restart import free_port, threadline
from tests.fakes.discord import FakeDiscord
from tests.fakes.openai_server import CutOff, FakeOpenAI, Hang, Reply
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, MENTION, FakeSlack, Message

WAIT = 30.0
CHANNEL = "CGENERAL"
HALF = "Half of an answer that never ends"
WHOLE = "The whole answer."


def live_records(database: Path) -> list[dict[str, Any]]:
    """What the sessions keep of their runs' live messages."""
    if not database.exists():
        return []
    with contextlib.closing(sqlite3.connect(database)) as db:
        rows = db.execute("SELECT stop_buttons FROM sessions").fetchall()
    return [record for row in rows for record in json.loads(row[0])]


def has_stop(message: Message) -> bool:
    return any(b["text"]["text"] == "Stop" for b in message.buttons)


def slack_settings(slack: FakeSlack, model: FakeOpenAI, **more: str) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "sk-test",
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_APP_TOKEN": APP_TOKEN,
        "SLACK_API_URL": slack.api_url,
        "THREADLINE_PLAYGROUND": "true",
        **more,
    }


@contextlib.asynccontextmanager
async def fake_slack() -> AsyncIterator[FakeSlack]:
    slack = FakeSlack()
    await slack.start()
    try:
        yield slack
    finally:
        await slack.stop()


@contextlib.asynccontextmanager
async def released(*events: asyncio.Event) -> AsyncIterator[None]:
    """Lets held model answers end before the program and the fake model stop."""
    try:
        yield
    finally:
        for event in events:
            event.set()


class Thread:
    def __init__(self, slack: FakeSlack, root: Message) -> None:
        self.slack, self.root = slack, root

    def replies(self) -> list[Message]:
        return [m for m in self.slack.replies(CHANNEL, self.root.ts) if m.bot_id]

    def with_stop(self) -> list[Message]:
        return [m for m in self.replies() if has_stop(m)]

    def shown(self) -> str:
        return "\n".join(m.shown for m in self.replies())

    def has(self, text: str) -> bool:
        return text in self.shown()


async def asked(slack: FakeSlack, text: str) -> Thread:
    await slack.wait_for(lambda: bool(slack.socket.connections), WAIT)
    return Thread(slack, await slack.say("UADA", CHANNEL, f"{MENTION} {text}"))


async def killed(proc: asyncio.subprocess.Process) -> None:
    proc.send_signal(signal.SIGKILL)
    await proc.wait()


async def test_slack_edits_killed_mid_answer_keep_their_text_without_stop(
    tmp_path: Path,
) -> None:
    stall = asyncio.Event()
    database = tmp_path / "data" / "threadline.sqlite3"
    async with fake_slack() as slack, FakeOpenAI() as model, released(stall):
        model.push(CutOff(Reply(HALF, text_chunk_chars=4), 4, hold_until=stall), Reply(WHOLE))
        settings = slack_settings(slack, model, THREADLINE_SLACK_STREAMING="edit")
        async with threadline(tmp_path, free_port(), **settings) as first:
            thread = await asked(slack, "tell me")
            await slack.wait_for(
                lambda: any(m.shown.startswith("Half") for m in thread.with_stop()), WAIT
            )
            cut = thread.with_stop()[0]
            await slack.wait_for(
                lambda: any(r["id"] == cut.ts and r["text"] for r in live_records(database)),
                WAIT,
            )
            await killed(first)  # mid-answer: the Stop button is on the reply
        assert has_stop(cut)
        async with threadline(tmp_path, free_port(), **settings):
            await slack.wait_for(lambda: thread.has(WHOLE), WAIT)
            await slack.wait_for(lambda: not thread.with_stop() and not live_records(database))
    assert cut.shown.startswith("Half") and "Interrupted by a restart" in cut.shown
    assert not cut.buttons
    assert slack.count("conversations.replies") == 0, "mended from what was kept"
    assert slack.open_streams(CHANNEL) == []


async def test_slack_native_stream_killed_mid_answer_is_stopped_and_its_control_goes(
    tmp_path: Path,
) -> None:
    stall = asyncio.Event()
    database = tmp_path / "data" / "threadline.sqlite3"
    async with fake_slack() as slack, FakeOpenAI() as model, released(stall):
        model.push(CutOff(Reply(HALF, text_chunk_chars=4), 4, hold_until=stall), Reply(WHOLE))
        settings = slack_settings(slack, model, THREADLINE_SLACK_STREAMING="native")
        async with threadline(tmp_path, free_port(), **settings) as first:
            thread = await asked(slack, "tell me")
            await slack.wait_for(
                lambda: bool(slack.open_streams(CHANNEL)) and bool(thread.with_stop()), WAIT
            )
            stream, control = slack.open_streams(CHANNEL)[0], thread.with_stop()[0]
            assert "Working" in control.shown
            await slack.wait_for(
                lambda: {r["id"] for r in live_records(database)} == {stream.ts, control.ts}, WAIT
            )
            await killed(first)
        assert stream.streaming and has_stop(control)
        async with threadline(tmp_path, free_port(), **settings):
            await slack.wait_for(lambda: thread.has(WHOLE), WAIT)
            await slack.wait_for(lambda: not thread.with_stop() and not live_records(database))
    assert slack.open_streams(CHANNEL) == [], "no stream is left open"
    assert control.deleted
    assert stream.shown.startswith("Half") and "Interrupted by a restart" in stream.shown


async def test_the_control_message_stops_a_native_run_for_those_allowed_only(
    tmp_path: Path,
) -> None:
    (tmp_path / "threadline.toml").write_text('[access]\ndeny_users = ["slack:UGRACE"]\n')
    stall = asyncio.Event()
    async with fake_slack() as slack, FakeOpenAI() as model, released(stall):
        model.push(CutOff(Reply(HALF, text_chunk_chars=4), 4, hold_until=stall))
        settings = slack_settings(slack, model, THREADLINE_SLACK_STREAMING="native")
        async with threadline(tmp_path, free_port(), **settings):
            thread = await asked(slack, "tell me")
            await slack.wait_for(
                lambda: bool(slack.open_streams(CHANNEL)) and bool(thread.with_stop()), WAIT
            )
            control = thread.with_stop()[0]
            await slack.click("UGRACE", control, "Stop")
            await slack.wait_for(lambda: slack.ephemerals("UGRACE") == [STOP_REFUSED], WAIT)
            assert has_stop(control) and not thread.has("Stopped by")

            await slack.click("UADA", control, "Stop")
            await slack.wait_for(lambda: thread.has("Stopped by Ada"), WAIT)
            await slack.wait_for(lambda: control.deleted and not slack.open_streams(CHANNEL))
            assert slack.ephemerals("UADA") == []
            assert not thread.with_stop()


async def test_slack_a_silent_model_shows_working_and_stop_which_ends_the_run(
    tmp_path: Path,
) -> None:
    silent = asyncio.Event()
    async with fake_slack() as slack, FakeOpenAI() as model, released(silent):
        model.push(Hang(silent))
        async with threadline(tmp_path, free_port(), **slack_settings(slack, model)):
            thread = await asked(slack, "are you there?")
            await model.wait_for_requests(1, within=WAIT)
            began = asyncio.get_running_loop().time()
            await slack.wait_for(lambda: bool(thread.with_stop()), WAIT)
            assert asyncio.get_running_loop().time() - began < 10, "Stop shows within seconds"
            stop = thread.with_stop()[0]
            assert "Working" in stop.shown
            await slack.click("UADA", stop, "Stop")
            await slack.wait_for(lambda: thread.has("Stopped by Ada"), WAIT)
            await slack.wait_for(lambda: not thread.with_stop(), WAIT)
            assert not thread.has("Working")


async def test_slack_the_first_token_timeout_ends_the_run_with_a_note(tmp_path: Path) -> None:
    silent = asyncio.Event()
    async with fake_slack() as slack, FakeOpenAI() as model, released(silent):
        model.push(Hang(silent, "token"))
        settings = slack_settings(
            slack,
            model,
            THREADLINE_MODEL_FIRST_TOKEN_TIMEOUT_S="1.5",
            THREADLINE_SLACK_STREAMING="edit",
        )
        async with threadline(tmp_path, free_port(), **settings):
            thread = await asked(slack, "are you there?")
            await slack.wait_for(lambda: thread.has("sent nothing for 1.5 s"), WAIT)
            await slack.wait_for(lambda: not thread.with_stop(), WAIT)
            assert len(model.requests) == 1, "given up on, not retried"
            assert not thread.has("Working")


async def test_discord_a_silent_model_shows_stop_which_ends_the_run(tmp_path: Path) -> None:
    silent = asyncio.Event()
    fake = FakeDiscord(SystemClock())
    await fake.start()
    try:
        guild = fake.world.add_guild("Lab")
        channel = fake.world.add_channel(guild, "general")
        ada = fake.world.add_user("Ada", guild=guild)
        async with FakeOpenAI() as model, released(silent):
            model.push(Hang(silent))
            extra = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test"}
            async with discord_threadline(tmp_path, fake, extra):
                question = fake.say(channel, ada, f"<@{fake.world.bot.id}> are you there?")
                await fake.wait_for(
                    lambda: fake.world.messages[question.id].thread_id is not None, WAIT
                )
                thread = fake.world.channels[question.id]
                await model.wait_for_requests(1, within=WAIT)

                def stops() -> list[tuple[Any, str]]:
                    return [
                        (m, str(b["custom_id"]))
                        for m in fake.world.in_channel(thread.id)
                        for row in m.components
                        for b in row["components"]
                        if b.get("label") == "Stop"
                    ]

                await fake.wait_for(stops, WAIT)
                message, stop = stops()[0]
                assert "Working" in message.content
                fake.click(message, stop, ada)
                await fake.wait_for(
                    lambda: any("Stopped by" in m for m in fake.world.shown(thread.id)), WAIT
                )
                await fake.wait_for(lambda: not stops(), WAIT)
    finally:
        await fake.close()
