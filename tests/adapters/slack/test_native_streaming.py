"""Slack's native streaming (chat.startStream / appendStream / stopStream) through the real
slack_sdk against the fake Slack: task cards and the plan, and every way it can fail — the
answer always ends as the exact final text, once, within every Retry-After."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adapters.slack.conftest import HeldModel, slack_world
from tests.fakes.scripted_model import ScriptedModel, call, step, text
from tests.fakes.slack import MENTION, FakeSlack, Message

NATIVE = {"slack_streaming": "auto"}
FINAL = "First words and the rest of it."


def calls(fake: FakeSlack, method: str, outcome: str | None = None) -> list[dict[str, object]]:
    return [c.args for c in fake.api.calls if c.method == method and outcome in (None, c.outcome)]


def bot_replies(fake: FakeSlack, root: Message) -> list[Message]:
    return [m for m in fake.replies(root.channel, root.ts) if m.bot_id]


async def test_an_answer_streams_natively_to_the_person_who_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel([text("First words", " and the rest", " of it.")])
    async with slack_world(tmp_path, monkeypatch, model=model, **NATIVE) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} go")
        await world.fake.wait_for(
            lambda: [m.shown for m in bot_replies(world.fake, root)] == [FINAL]
        )
        await world.idle()
        [reply] = bot_replies(world.fake, root)
        assert not reply.streaming, "the stream was stopped at the end"
        [start] = calls(world.fake, "chat.startStream", "ok")
        assert start["recipient_user_id"] == "UADA" and start["recipient_team_id"] == "T0FAKE"
        assert calls(world.fake, "chat.update") == [], "no edit budget spent"


async def test_tool_calls_are_task_cards_and_the_todos_a_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    todos = {
        "todos": [
            {"content": "Look it up", "status": "in_progress"},
            {"content": "Answer", "status": "pending"},
        ]
    }
    model = ScriptedModel(
        [
            step(
                call("todo_write", todos, say="Let me look."),
                call("recall", {"query": "deploy"}, index=1, provider_id="c1"),
            ),
            text(" Found nothing."),
        ]
    )
    async with slack_world(tmp_path, monkeypatch, model=model, **NATIVE) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} what about deploys?")
        await world.fake.wait_for(
            lambda: any(m.shown.endswith("Found nothing.") for m in bot_replies(world.fake, root))
        )
        await world.idle()
        reply = next(m for m in bot_replies(world.fake, root) if m.shown.startswith("Let me look."))
        cards = list(reply.tasks.values())
        recall = next(c for c in cards if "recall" in c["title"])
        assert recall["status"] == "complete"
        assert {c["title"] for c in cards} >= {"Look it up", "Answer"}
        assert reply.plan_title == "Plan · 0/2 done"
        panel = next(m for m in bot_replies(world.fake, root) if "Plan" in m.shown)
        assert world.fake.pins("CGENERAL") == [panel.ts], "the pinned todo panel stays"


async def test_an_expired_stream_is_finished_by_editing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = HeldModel(ScriptedModel([text("First words", " and the rest of it.")]), hold_after=1)
    async with slack_world(tmp_path, monkeypatch, model=model, **NATIVE) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} go")
        await world.fake.wait_for(lambda: any(m.streaming for m in bot_replies(world.fake, root)))
        world.fake.api.stream_ttl = 0.0  # message_not_in_streaming_state from now on
        model.release()
        await world.fake.wait_for(
            lambda: [m.shown for m in bot_replies(world.fake, root)] == [FINAL]
        )
        await world.idle()
        assert calls(world.fake, "chat.appendStream", "message_not_in_streaming_state") != []
        assert [m.shown for m in bot_replies(world.fake, root)] == [FINAL], "the same message, once"


async def test_a_too_long_append_goes_on_in_edited_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    long_piece = " " + " ".join(f"word{i}" for i in range(120))  # ~800 characters
    model = HeldModel(ScriptedModel([text("Start.", long_piece)]), hold_after=1)
    fake = FakeSlack(markdown_limit=500)
    async with slack_world(tmp_path, monkeypatch, model=model, fake=fake, **NATIVE) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} go")
        await world.fake.wait_for(lambda: any(m.streaming for m in bot_replies(world.fake, root)))
        model.release()
        expected = ("Start." + long_piece).split()
        await world.fake.wait_for(
            lambda: " ".join(m.shown for m in bot_replies(world.fake, root)).split() == expected, 10
        )
        await world.idle()
        assert calls(world.fake, "chat.appendStream", "msg_too_long") != []
        assert all(len(m.shown) <= 500 for m in bot_replies(world.fake, root))
        assert world.fake.limits.violations.total() == 0


async def test_a_channel_without_streaming_gets_edits_and_is_not_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeSlack()
    async with slack_world(tmp_path, monkeypatch, fake=fake, **NATIVE) as world:
        world.fake.workspace.channels["CGENERAL"].streaming_allowed = False
        for word in ("one", "two"):
            root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} {word}")
            replies = await world.answered(root)
            assert [m.shown for m in replies if m.bot_id] == [f"Ada said: {word}"]
        assert len(calls(world.fake, "chat.startStream")) == 1, "refused once, remembered"


async def test_a_429_storm_on_every_method_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = HeldModel(ScriptedModel([text("First words", " and the rest of it.")]), hold_after=1)
    async with slack_world(tmp_path, monkeypatch, model=model, **NATIVE) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} go")
        await world.fake.wait_for(lambda: any(m.shown for m in bot_replies(world.fake, root)))
        world.fake.limits.storm_all(3, retry_after=0.3)
        model.release()
        await world.fake.wait_for(
            lambda: [m.shown for m in bot_replies(world.fake, root)] == [FINAL], 15
        )
        await world.idle()
        assert sum(world.fake.limits.rejected.values()) >= 3
        assert world.fake.limits.violations.total() == 0, "every Retry-After was honoured"


async def test_a_restart_mid_stream_closes_the_stream_and_the_answer_goes_on_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = "The whole answer, after the restart."
    model = HeldModel(ScriptedModel([text("Half an ans", "wer."), text(whole)]), hold_after=1)
    async with slack_world(tmp_path, monkeypatch, model=model, **NATIVE) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} go")
        await world.fake.wait_for(lambda: any(m.streaming for m in bot_replies(world.fake, root)))
        await world.restart()
        model.release()
        await world.fake.wait_for(
            lambda: len(bot_replies(world.fake, root)) == 2
        )  # the word after it
        await world.idle()
        partial, notice = bot_replies(world.fake, root)
        assert partial.shown == "Half an ans", "what was streamed stays as it was"
        assert not partial.streaming, "no stream is left open"
        assert "restarted" in notice.shown

        await world.fake.say("UADA", "CGENERAL", "go on", thread_ts=root.ts)
        await world.fake.wait_for(
            lambda: any(m.shown == whole for m in bot_replies(world.fake, root))
        )
        await world.idle()
        shown = [m.shown for m in bot_replies(world.fake, root)]
        assert shown == ["Half an ans", notice.shown, whole], "continued once, in a new message"
        assert not any(m.streaming for m in bot_replies(world.fake, root))
