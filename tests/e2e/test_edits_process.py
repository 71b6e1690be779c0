"""The real program on the fake Slack (Socket Mode and HTTP) and the fake Discord: a person edits
the message the bot is answering, or has just answered; the run starts again on the new text,
the old answer is marked replaced, and the model reads the new text only. Slack's retry of the
edit, also after a restart, changes nothing more."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
from pathlib import Path
from typing import Any

from bot.infra.clock import SystemClock
from tests.adapters.discord.test_process import threadline as discord_threadline
from tests.e2e.test_process_restart import free_port, threadline
from tests.e2e.test_stop_process import fake_slack, released, slack_settings
from tests.fakes.discord import FakeDiscord
from tests.fakes.openai_server import CutOff, FakeOpenAI, RecordedRequest, Reply
from tests.fakes.slack import BOT_TOKEN, MENTION, SIGNING_SECRET, FakeSlack, Message

WAIT = 30.0
CHANNEL = "CGENERAL"
REPLACED = "Replaced: the message this answered was edited"


def shown(slack: FakeSlack, root: Message) -> list[str]:
    return [m.shown for m in slack.replies(CHANNEL, root.ts)]


def asked(request: RecordedRequest) -> list[tuple[str, str]]:
    """What a model request held of the conversation: people's and the bot's words."""
    said = [m for m in request.messages if m["role"] in {"user", "assistant"}]
    return [(m["role"], _text(m.get("content"))) for m in said]


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def states(database: Path) -> list[str]:
    """The run state of every stored session."""
    if not database.exists():
        return []
    with contextlib.closing(sqlite3.connect(database)) as db:
        return [row[0] for row in db.execute("SELECT state FROM sessions")]


def edit_of(slack: FakeSlack, user: str) -> Any:
    """The delivery of ``user``'s edit."""
    return next(
        d
        for d in slack.deliveries
        if d.payload.get("event", {}).get("subtype") == "message_changed"
        and d.payload["event"]["message"].get("user") == user
    )


async def test_slack_an_edit_mid_answer_restarts_the_run_and_a_restart_runs_nothing_again(
    tmp_path: Path,
) -> None:
    stall = asyncio.Event()
    async with fake_slack() as slack, FakeOpenAI() as model, released(stall):
        model.push(
            CutOff(Reply("Paris, and much more", text_chunk_chars=4), 3, hold_until=stall),
            Reply("Rome."),
        )
        settings = slack_settings(slack, model)
        async with threadline(tmp_path, free_port(), **settings) as first:
            await slack.wait_for(lambda: bool(slack.socket.connections), WAIT)
            root = await slack.say("UADA", CHANNEL, f"{MENTION} capital of France?")
            await slack.wait_for(lambda: any("Par" in s for s in shown(slack, root)), WAIT)

            await slack.edit(root, f"{MENTION} capital of Italy?")  # while it answers
            await slack.wait_for(lambda: any("Rome." in s for s in shown(slack, root)), WAIT)
            await slack.wait_for(lambda: REPLACED in shown(slack, root)[0], WAIT)
            assert len(model.requests) == 2
            assert "Italy" in asked(model.requests[1])[-1][1]
            assert not any("France" in text for _, text in asked(model.requests[1]))
            assert not any("Par" in text for _, text in asked(model.requests[1]))
            database = tmp_path / "data" / "threadline.sqlite3"
            await slack.wait_for(lambda: states(database) == ["idle"], WAIT)  # its run ended
            first.send_signal(signal.SIGKILL)
            await first.wait()

        async with threadline(tmp_path, free_port(), **settings):
            await slack.wait_for(lambda: bool(slack.socket.connections), WAIT)
            retried = await slack.redeliver(edit_of(slack, "UADA"))  # Slack tries again
            assert retried.acked_in_time
            model.push(Reply("You're welcome."))
            await slack.say("UADA", CHANNEL, f"{MENTION} thanks", thread_ts=root.ts)
            await slack.wait_for(lambda: any("welcome" in s for s in shown(slack, root)), WAIT)
    assert len(model.requests) == 3, "the edit was answered once, nothing was run again"
    assert [s for s in shown(slack, root) if "Rome." in s] == ["Rome."]


async def test_slack_http_an_edit_after_the_answer_replaces_it_once(tmp_path: Path) -> None:
    slack = FakeSlack(mode="http")
    await slack.start()
    port = free_port()
    try:
        async with FakeOpenAI() as model:
            model.push(Reply("Paris."), Reply("Rome."))
            settings = {
                "OPENAI_BASE_URL": model.base_url,
                "OPENAI_API_KEY": "sk-test",
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_SIGNING_SECRET": SIGNING_SECRET,
                "SLACK_API_URL": slack.api_url,
                "THREADLINE_PLAYGROUND": "true",
            }
            async with threadline(tmp_path, port, **settings):
                slack.http_target = f"http://127.0.0.1:{port}/slack/events"
                root = await slack.say("UADA", CHANNEL, f"{MENTION} capital of France?")
                await slack.wait_for(lambda: shown(slack, root) == ["Paris."], WAIT)
                delivery = await slack.edit(root, f"{MENTION} capital of Italy?")
                assert delivery.acked_in_time
                await slack.wait_for(lambda: shown(slack, root)[1:] == ["Rome."], WAIT)
                assert REPLACED in shown(slack, root)[0]
                assert (await slack.redeliver(delivery)).acked_in_time
                model.push(Reply("Madrid."))
                await slack.say("UGRACE", CHANNEL, f"{MENTION} and Spain?", thread_ts=root.ts)
                await slack.wait_for(lambda: "Madrid." in shown(slack, root), WAIT)
                await slack.edit(root, f"{MENTION} capital of Peru?")  # Grace wrote since
                model.push(Reply("Ok."))
                await slack.say("UADA", CHANNEL, f"{MENTION} ok", thread_ts=root.ts)
                await slack.wait_for(lambda: "Ok." in shown(slack, root), WAIT)
            assert all("France" not in text for _, text in asked(model.requests[1]))
            assert len(model.requests) == 4
            assert shown(slack, root)[1:] == ["Rome.", "Madrid.", "Ok."]
    finally:
        await slack.stop()


async def test_discord_an_edit_after_the_answer_replaces_it(tmp_path: Path) -> None:
    fake = FakeDiscord(SystemClock())
    await fake.start()
    try:
        guild = fake.world.add_guild("Lab")
        channel = fake.world.add_channel(guild, "general")
        ada = fake.world.add_user("Ada", guild=guild)
        async with FakeOpenAI() as model:
            model.push(Reply("Paris."), Reply("Rome."))
            extra = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test"}
            async with discord_threadline(tmp_path, fake, extra):
                bot = fake.world.bot.id
                question = fake.say(channel, ada, f"<@{bot}> capital of France?")
                await fake.wait_for(
                    lambda: fake.world.messages[question.id].thread_id is not None, WAIT
                )
                thread = fake.world.channels[question.id]
                await fake.wait_for(lambda: fake.world.shown(thread.id) == ["Paris."], WAIT)
                fake.edit(question, f"<@{bot}> capital of Italy?")
                await fake.wait_for(lambda: fake.world.shown(thread.id)[1:] == ["Rome."], WAIT)
                assert REPLACED in fake.world.shown(thread.id)[0]
            assert len(model.requests) == 2
            assert all("France" not in text for _, text in asked(model.requests[1]))
    finally:
        await fake.close()
