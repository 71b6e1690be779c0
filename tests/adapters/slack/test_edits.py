"""Edits on Slack (``message_changed``), through the real slack-bolt and slack_sdk against the
fake Slack, over Socket Mode and HTTP: a person's edit of the message the bot just answered
replaces the answer and answers the new text; the bot's own edits, an unfurl, a retried
delivery, and an edit after someone else wrote change nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.slack.parse import parse_edit
from bot.llm.messages import UserMessage
from tests.adapters.slack.conftest import slack_world
from tests.adapters.slack.test_setup import ALL_SCOPES, doctor
from tests.fakes.slack import MENTION, FakeSlack, Message

WAIT = 30.0
BOT = "UBOT"
MODES = pytest.mark.parametrize("mode", ["socket", "http"])
REPLACED = "Replaced: the message this answered was edited"


def changed(new: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    message = {"type": "message", "user": "U1", "ts": "10.1", "text": f"<@{BOT}> hi", **new}
    return {
        "type": "message",
        "subtype": "message_changed",
        "hidden": True,
        "channel": "C1",
        "channel_type": "channel",
        "ts": "20.0",
        "message": message,
        "previous_message": old or {"type": "message", "ts": "10.1", "text": f"<@{BOT}> hey"},
    }


def test_a_persons_edit_is_read_and_the_rest_ignored() -> None:
    edit = parse_edit(changed({"edited": {"user": "U1", "ts": "15.0"}}), BOT)
    assert edit is not None
    assert (edit.ts, edit.root_ts, edit.text, edit.edited) == ("10.1", "10.1", "hi", "15.0")
    assert edit.needs_session and edit.event_id("T1") == "slack:T1:C1:10.1:edited:15.0"
    reply = parse_edit(
        changed({"edited": {"ts": "15.0"}, "thread_ts": "9.0", "text": "no mention"}), BOT
    )
    assert reply is not None and reply.root_ts == "9.0" and reply.text == "no mention"
    for ignored in (
        changed({"edited": {"ts": "15.0"}, "bot_id": "B1"}),  # the bot's own edit
        changed({"edited": {"ts": "15.0"}, "user": BOT}),
        changed({"edited": {"ts": "15.0"}}, {"text": f"<@{BOT}> hi"}),  # an unfurl: same text
        changed({}),  # no edit mark
        changed({"edited": {"ts": "15.0"}, "ts": "not a time"}),
        {**changed({"edited": {"ts": "15.0"}}), "subtype": "message_deleted"},
    ):
        assert parse_edit(ignored, BOT) is None


def by_ada(payload: dict[str, Any]) -> bool:
    """An event of Ada's edit."""
    event = payload.get("event", {})
    return bool(
        event.get("subtype") == "message_changed" and event["message"].get("user") == "UADA"
    )


def replies(world: Any, root: Message) -> list[str]:
    return [m.shown for m in world.fake.replies(root.channel, root.ts)]


@MODES
async def test_an_edit_replaces_the_answer_and_answers_the_new_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    async with slack_world(tmp_path, monkeypatch, mode=mode) as world:  # type: ignore[arg-type]
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} capital of France?")
        await world.answered(root)
        assert replies(world, root) == ["Ada said: capital of France?"]

        await world.fake.edit(root, f"{MENTION} capital of Italy?")
        await world.fake.wait_for(lambda: len(replies(world, root)) == 2, WAIT)
        await world.idle()
        old, new = replies(world, root)
        assert REPLACED in old and new == "Ada said: capital of Italy?"
        asked = [m for m in world.model.requests[-1].messages if isinstance(m, UserMessage)]
        assert [m.text for m in asked] == ["capital of Italy?"]

        # Slack retries the edit's delivery: nothing more happens
        edit = next(d for d in world.fake.deliveries if by_ada(d.payload))
        await world.fake.redeliver(edit)
        await world.idle()
        assert len(world.model.requests) == 2

        # Grace writes in the thread; an edit of Ada's message now changes nothing
        await world.fake.say("UGRACE", "CGENERAL", f"{MENTION} and Spain?", thread_ts=root.ts)
        await world.fake.wait_for(lambda: len(replies(world, root)) == 3, WAIT)
        await world.fake.edit(root, f"{MENTION} capital of Peru?")
        await world.idle()
        assert len(world.model.requests) == 3
        assert replies(world, root)[1:] == ["Ada said: capital of Italy?", "Grace said: and Spain?"]


async def test_doctor_says_edits_go_without_the_history_scopes(tmp_path: Path) -> None:
    fake = FakeSlack(scopes=ALL_SCOPES - {"channels:history"})
    await fake.start()
    try:
        lines = await doctor(tmp_path, **fake.settings())
    finally:
        await fake.stop()
    failures = [t for ok, t in lines if ok is False]
    assert any(
        "missing scopes: channels:history (replies and edits in threads of public channels)" in t
        for t in failures
    )
