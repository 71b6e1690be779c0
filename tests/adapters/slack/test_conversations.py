"""Conversations over Socket Mode: who gets answered, where, and exactly once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.slack.parse import thread_key
from bot.llm.messages import SystemMessage, UserMessage
from tests.adapters.slack.conftest import HeldModel, World, echo, slack_world
from tests.fakes.scripted_model import ScriptedModel, text
from tests.fakes.slack import BOT_USER, MENTION, FakeSlack, payloads
from tests.fakes.slack.server import ALL_SCOPES


@pytest.fixture
async def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[World]:
    async with slack_world(tmp_path, monkeypatch) as world:
        yield world


def speakers(world: World) -> list[list[tuple[str | None, str]]]:
    """For each model call, who said what (the names the model saw)."""
    return [
        [(m.author_name, m.text) for m in r.messages if isinstance(m, UserMessage)]
        for r in world.model.requests
    ]


async def test_a_mention_is_answered_in_a_thread_by_one_streamed_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = HeldModel(
        ScriptedModel([text("Hello ", "Ada, ", "here is ", "the answer.")]), hold_after=1
    )
    async with slack_world(tmp_path, monkeypatch, model=model) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} what is up?")
        await world.fake.wait_for(lambda: bool(world.fake.replies("CGENERAL", root.ts)))
        first = world.fake.replies("CGENERAL", root.ts)[0]
        assert first.shown == "Hello"  # visible before the model has finished
        model.release()
        await world.fake.wait_for(lambda: first.shown == "Hello Ada, here is the answer.")
        await world.idle()

        replies = world.fake.replies("CGENERAL", root.ts)
        assert [m.shown for m in replies] == ["Hello Ada, here is the answer."]
        assert replies[0].thread_ts == root.ts and replies[0].edits >= 1
        assert world.fake.thread("CGENERAL", root.ts)[0] is root
        assert await world.runtime.core.has_session(f"slack:T0FAKE:CGENERAL:{root.ts}")  # type: ignore[union-attr, arg-type]
        assert speakers(world) == [[("Ada", "what is up?")]]


async def test_the_thread_continues_without_a_mention_and_the_model_knows_who_speaks(
    world: World,
) -> None:
    root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} shall we plan the release?")
    await world.answered(root)
    await world.fake.say("UGRACE", "CGENERAL", "I can take the notes, <@UADA>", thread_ts=root.ts)
    await world.answered(root, 2)
    await world.fake.say("UADA", "CGENERAL", "thanks", thread_ts=root.ts)
    replies = await world.answered(root, 3)

    assert [m.shown for m in replies] == [
        "Ada said: shall we plan the release?",
        "Grace said: I can take the notes, @Ada",
        "Ada said: thanks",
    ]
    assert speakers(world)[-1] == [
        ("Ada", "shall we plan the release?"),
        ("Grace", "I can take the notes, @Ada"),
        ("Ada", "thanks"),
    ]
    assert world.fake.count("users.info") == 2  # each name looked up once


async def test_messages_the_bot_is_not_part_of_are_ignored(world: World) -> None:
    top = await world.fake.say("UADA", "CGENERAL", "lunch anyone?")
    await world.fake.say("UGRACE", "CGENERAL", "yes!", thread_ts=top.ts)
    await world.idle()
    assert world.fake.replies("CGENERAL", top.ts) == []
    assert world.model.requests == []

    await world.fake.say("UGRACE", "CGENERAL", f"{MENTION} where should we go?", thread_ts=top.ts)
    replies = await world.answered(top)
    assert [m.shown for m in replies] == ["Grace said: where should we go?"]
    assert replies[0].thread_ts == top.ts  # joined the existing thread


async def test_a_reply_that_arrives_before_its_threads_mention_is_answered_after_it(
    world: World,
) -> None:
    fake = world.fake
    general = fake.workspace.channels["CGENERAL"]
    root = fake.workspace.post("CGENERAL", "UADA", f"{MENTION} shall we plan the release?")
    reply = fake.workspace.post("CGENERAL", "UGRACE", "I can take the notes", thread_ts=root.ts)
    await fake.deliver_event(payloads.message_event(reply, general))  # Slack's order is not kept
    await world.idle()
    assert world.model.requests == []
    await fake.deliver_event(payloads.message_event(root, general))
    await fake.deliver_event(payloads.mention_event(root))

    replies = await world.answered(root, 2)
    assert [m.shown for m in replies] == [
        "Ada said: shall we plan the release?",
        "Grace said: I can take the notes",
    ]


async def test_a_direct_message_needs_no_mention_and_gets_its_own_thread(world: World) -> None:
    first = await world.fake.say("UADA", "DADA", "hi, can you help?")
    replies = await world.answered(first)
    assert [m.shown for m in replies] == ["Ada said: hi, can you help?"]
    assert replies[0].thread_ts == first.ts

    await world.fake.say("UADA", "DADA", "great", thread_ts=first.ts)
    assert [m.shown for m in await world.answered(first, 2)][-1] == "Ada said: great"
    second = await world.fake.say("UADA", "DADA", "another topic")
    await world.answered(second)
    assert len(speakers(world)[-1]) == 1  # a new top-level DM is a new session


async def test_a_private_channel_works_like_a_public_one(world: World) -> None:
    root = await world.fake.say("UGRACE", "GSECRET", f"{MENTION} status?")
    assert [m.shown for m in await world.answered(root)] == ["Grace said: status?"]


async def test_own_other_bots_edited_and_deleted_messages_are_ignored(world: World) -> None:
    root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} one")
    await world.answered(root)
    assert len(world.model.requests) == 1  # the bot's own post and edits came back as events

    await world.fake.other_bot_says("CGENERAL", f"{MENTION} I am a bot", thread_ts=root.ts)
    await world.fake.other_bot_says("CGENERAL", f"{MENTION} me too")
    plain = await world.fake.say("UADA", "CGENERAL", "no mention yet")
    await world.fake.edit(plain, f"{MENTION} now with a mention")  # never seen: nothing
    await world.fake.delete(plain)
    await world.fake.say(BOT_USER, "CGENERAL", f"{MENTION} talking to myself")
    await world.idle()

    assert len(world.model.requests) == 1
    assert world.fake.replies("CGENERAL", plain.ts) == []
    assert [m.shown for m in world.fake.replies("CGENERAL", root.ts) if m.bot_id == "BBOT"] == [
        "Ada said: one"
    ]


async def test_a_mention_arrives_as_two_events_and_is_answered_once(world: World) -> None:
    root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} once please")
    await world.answered(root)
    mine = [d for d in world.fake.deliveries if d.payload["event"].get("ts") == root.ts]
    assert sorted(d.payload["event"]["type"] for d in mine) == ["app_mention", "message"]
    assert len({d.event_id for d in mine}) == 2  # two different event ids, one answer
    assert len(world.model.requests) == 1 and len(world.fake.replies("CGENERAL", root.ts)) == 1


async def test_redeliveries_are_answered_once(world: World) -> None:
    root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} hello")
    await world.answered(root)
    first = [d for d in world.fake.deliveries if d.payload["event"].get("ts") == root.ts]
    for delivery in first:
        again = await world.fake.redeliver(delivery)
        assert again.acked_in_time
    await world.idle()
    assert len(world.model.requests) == 1
    assert [m.shown for m in world.fake.replies("CGENERAL", root.ts)] == ["Ada said: hello"]


async def test_events_are_acknowledged_at_once_while_the_core_is_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = HeldModel(ScriptedModel([], respond=echo), hold_after=1)
    async with slack_world(tmp_path, monkeypatch, model=model) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} think hard")
        await world.fake.wait_for(lambda: bool(world.fake.replies("CGENERAL", root.ts)))
        for i in range(5):  # the thread's run is held: these wait in the core, not in the ack
            await world.fake.say("UGRACE", "CGENERAL", f"and {i}?", thread_ts=root.ts)
        assert all(
            d.acked_in_time for d in world.fake.deliveries
        )  # Slack's deadline; a held ack would miss it
        model.release()
        await world.fake.wait_for(
            lambda: world.fake.replies("CGENERAL", root.ts)[-1].shown == "Grace said: and 4?"
        )
        await world.idle()
        said = [t for who, t in speakers(world)[-1] if who == "Grace"]
        assert said == [f"and {i}?" for i in range(5)]  # every message reached the model, in order


async def test_a_message_is_stored_before_slack_is_acknowledged_even_when_slack_is_slow(
    world: World,
) -> None:
    world.fake.api.slow["users.info"] = 3.0  # the name lookup would outlast Slack's 3 s
    root = await world.fake.say("UNEW", "CGENERAL", f"{MENTION} remember me")
    assert all(d.acked_in_time for d in world.fake.deliveries)
    key = thread_key(world.adapter.identity.team_id, "CGENERAL", root.ts)  # type: ignore[union-attr]
    store = world.adapter.core.store  # type: ignore[attr-defined]
    arrived = [m.text for k, m in await store.arrivals() if k == key]
    kept = [
        m.text for m in (await store.load_session(key, 0.0)).messages if isinstance(m, UserMessage)
    ]
    assert arrived + kept == ["remember me"]  # a crash right after the ack loses nothing
    await world.answered(root)


async def test_malformed_events_are_acknowledged_and_change_nothing(world: World) -> None:
    bad_events = [
        {"type": "message"},
        {"type": "message", "channel": 5, "ts": [], "user": None, "text": MENTION},
        {"type": "app_mention", "channel": "CGENERAL", "ts": "1.1", "user": "UADA", "text": 42},
        {
            "type": "message",
            "channel": "CGENERAL",
            "ts": "1.2",
            "user": "UADA",
            "text": MENTION,
            "files": "not a list",
        },
        {"type": "reaction_added", "user": "UADA", "reaction": "tada"},
    ]
    for event in bad_events:
        assert (await world.fake.deliver_event(event)).acked_in_time
    await world.fake.deliver("events_api", {"type": "event_callback", "event": "not an object"})
    await world.idle()
    assert world.model.requests == []
    root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} still there?")
    assert [m.shown for m in await world.answered(root)] == ["Ada said: still there?"]


async def test_the_socket_mode_link_comes_back_after_a_drop_or_a_refresh(world: World) -> None:
    assert world.fake.count("apps.connections.open") == 1  # through SLACK_API_URL, to the fake
    await world.fake.socket.drop()
    await world.fake.wait_for(
        lambda: world.fake.socket.opened == 2 and bool(world.fake.socket.connections)
    )
    root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} after the drop")
    assert [m.shown for m in await world.answered(root)] == ["Ada said: after the drop"]

    await world.fake.socket.ask_to_reconnect()
    await world.fake.wait_for(
        lambda: world.fake.socket.opened == 3 and len(world.fake.socket.connections) == 1
    )
    again = await world.fake.say("UADA", "CGENERAL", f"{MENTION} after the refresh")
    assert [m.shown for m in await world.answered(again)] == ["Ada said: after the refresh"]
    assert world.fake.count("apps.connections.open") == 3


def situation(world: World) -> str:
    """The note of where and when, as the model read it in its last call."""
    notes = [
        m.text
        for m in world.model.requests[-1].messages
        if isinstance(m, SystemMessage) and m.text.startswith("Now: ")
    ]
    assert len(notes) == 1, notes
    return notes[0]


async def test_the_model_knows_the_time_the_channel_and_who_spoke(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    channels = {"slack:T0FAKE:CGENERAL": {"timezone": "Asia/Tokyo"}}
    async with slack_world(tmp_path, monkeypatch, channels=channels) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} shall we plan the release?")
        await world.answered(root)
        await world.fake.say("UGRACE", "CGENERAL", "yes", thread_ts=root.ts)
        await world.answered(root, 2)
        note = situation(world)
        assert "UTC (" in note and "in Asia/Tokyo, the channel's time zone)" in note
        assert "Place: a thread in the channel 'general' on Slack." in note
        assert note.endswith('<tool_output tool="people">\nAda\nGrace\n</tool_output>')
        assert world.fake.count("conversations.info") == 1  # the name is kept

        dm = await world.fake.say("UADA", "DADA", "hi")
        await world.answered(dm)
        assert "Place: a direct message with you on Slack." in situation(world)


async def test_without_the_scope_to_read_channel_names_the_note_names_no_channel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeSlack(scopes=ALL_SCOPES - {"channels:read"})
    async with slack_world(tmp_path, monkeypatch, fake=fake) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} hello")
        assert [m.shown for m in await world.answered(root)] == ["Ada said: hello"]
        assert "Place: a thread on Slack." in situation(world)
