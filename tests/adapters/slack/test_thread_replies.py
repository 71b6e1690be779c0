"""Threads that answer mentions only, quiet threads, and the message shortcuts, on Slack through
the real slack-bolt and slack_sdk against the fake Slack (Socket Mode and HTTP).

A channel with ``thread_replies = "mentions"`` answers a message of the bot's thread only when
it mentions the bot; the others are kept and reach the model, with their authors, with the next
mention. The shortcuts (``threadline_quiet``, ``_status``, ``_stop``, ``_reset``) work on any
message of a thread and answer the person alone; a reset asks to confirm with a button.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.slack.listeners import UNKNOWN_SHORTCUT
from bot.api.commands import CANNOT, RESET_DONE, STOPPED
from bot.api.inbound import ThreadKey
from bot.core import NOT_OURS, RESET_CONFIRM, STOP_REFUSED
from bot.llm.messages import UserMessage
from bot.thread.operations import LISTENING, QUIET
from tests.adapters.slack.conftest import HeldModel, World, slack_world
from tests.fakes.scripted_model import ScriptedModel, text
from tests.fakes.slack import MENTION, Message

WAIT = 30.0
MENTIONS = {"channels": {"slack:T0FAKE:CGENERAL": {"thread_replies": "mentions"}}}
MODES = pytest.mark.parametrize("mode", ["socket", "http"])


def key(root: Message) -> ThreadKey:
    return ThreadKey(f"slack:T0FAKE:{root.channel}:{root.ts}")


async def said(world: World, user: str, root: Message, text: str) -> Message:
    """``user`` writes in the thread of ``root``; returns once the bot has dealt with it."""
    message = await world.fake.say(user, root.channel, text, thread_ts=root.ts)
    await world.idle()
    return message


async def note(world: World, user: str, message: Message, callback_id: str, count: int) -> str:
    """``user`` uses a shortcut on ``message``; the ``count``-th private note they see."""
    delivery = await world.fake.shortcut(user, message, callback_id)
    assert delivery.acked_in_time
    await world.fake.wait_for(lambda: len(world.fake.ephemerals(user)) >= count, WAIT)
    await world.idle()
    notes = world.fake.ephemerals(user)
    assert len(notes) == count
    return notes[-1]


async def transcript(world: World, root: Message) -> list[UserMessage]:
    assert world.runtime is not None
    session = await world.runtime.core.store.load_session(key(root), 0.0)
    return [m for m in session.messages if isinstance(m, UserMessage)]


@MODES
async def test_a_mentions_only_channel_keeps_the_others_and_reads_them_with_the_next_mention(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    async with slack_world(tmp_path, monkeypatch, mode=mode, **MENTIONS) as world:  # type: ignore[arg-type]
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} watch the deploy")
        await world.answered(root)
        await said(world, "UGRACE", root, "the build is red on main")
        assert len(world.fake.replies("CGENERAL", root.ts)) == 1  # not answered...
        kept = (await transcript(world, root))[-1]  # ...but kept, with its author
        assert (kept.author_name, kept.text, kept.addressed) == (
            "Grace",
            "the build is red on main",
            False,
        )
        await world.fake.say("UADA", "CGENERAL", f"{MENTION} what broke?", thread_ts=root.ts)
        replies = await world.answered(root, 2, WAIT)
        assert replies[-1].shown == "Ada said: what broke?"
        asked = [m for m in world.model.requests[-1].messages if isinstance(m, UserMessage)]
        assert [(m.author_name, m.text) for m in asked[-2:]] == [
            ("Grace", "the build is red on main"),
            ("Ada", "what broke?"),
        ]
        # a direct message is always answered, and a thread elsewhere answers everything
        dm = await world.fake.say("UADA", "DADA", "hello there")
        await world.answered(dm)
        other = await world.fake.say("UADA", "GSECRET", f"{MENTION} hi")
        await world.answered(other)
        await world.fake.say("UGRACE", "GSECRET", "and me", thread_ts=other.ts)
        assert (await world.answered(other, 2, WAIT))[-1].shown == "Grace said: and me"


async def test_a_message_in_a_thread_the_bot_is_not_in_is_neither_answered_nor_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with slack_world(tmp_path, monkeypatch) as world:
        root = await world.fake.say("UADA", "CGENERAL", "people talking")
        await said(world, "UGRACE", root, "among themselves")
        assert world.fake.replies("CGENERAL", root.ts) == []
        assert world.runtime is not None
        assert not await world.runtime.core.has_session(key(root))
        assert world.model.requests == []


@MODES
async def test_the_quiet_shortcut_quiets_a_thread_across_a_restart_and_brings_it_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    async with slack_world(tmp_path, monkeypatch, mode=mode) as world:  # type: ignore[arg-type]
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} hello")
        replies = await world.answered(root)
        assert await note(world, "UGRACE", replies[0], "threadline_quiet", 1) == QUIET
        assert world.fake.workspace.ephemerals[-1].thread_ts == root.ts  # shown in the thread
        await said(world, "UGRACE", root, "just us talking")
        assert len(world.fake.replies("CGENERAL", root.ts)) == 1

        await world.restart()  # the flag is kept with the session
        await said(world, "UADA", root, "still quiet?")
        assert len(world.fake.replies("CGENERAL", root.ts)) == 1
        await world.fake.say("UADA", "CGENERAL", f"{MENTION} your turn", thread_ts=root.ts)
        await world.answered(root, 2, WAIT)
        assert await note(world, "UADA", root, "threadline_quiet", 1) == LISTENING
        await world.fake.say("UGRACE", "CGENERAL", "everyone again", thread_ts=root.ts)
        assert (await world.answered(root, 3, WAIT))[-1].shown == "Grace said: everyone again"
        texts = [m.text for m in await transcript(world, root)]
        assert texts == ["hello", "just us talking", "still quiet?", "your turn", "everyone again"]


@MODES
async def test_status_stop_and_a_confirmed_reset_by_shortcut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    model = HeldModel(
        ScriptedModel([text("First", " answer"), text("Working on it", " and done")]), hold_after=1
    )
    model.release()
    async with slack_world(tmp_path, monkeypatch, mode=mode, model=model) as world:  # type: ignore[arg-type]
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} remember 7")
        await world.answered(root)
        status = await note(world, "UADA", root, "threadline_status", 1)
        assert "Model: held scripted model" in status and "Messages: 2" in status
        assert "Answers: every message" in status

        model.released.clear()
        await world.fake.say("UADA", "CGENERAL", "a long task", thread_ts=root.ts)
        await world.fake.wait_for(
            lambda: any(
                "Working on it" in m.shown for m in world.fake.replies("CGENERAL", root.ts)
            ),
            WAIT,
        )
        delivery = await world.fake.shortcut("UADA", root, "threadline_stop")
        assert delivery.acked_in_time
        await world.fake.wait_for(lambda: len(world.fake.ephemerals("UADA")) == 2, WAIT)
        assert world.fake.ephemerals("UADA")[-1] == STOPPED["stopping"]
        model.release()
        await world.fake.wait_for(
            lambda: any("Stopped by" in m.shown for m in world.fake.replies("CGENERAL", root.ts)),
            WAIT,
        )
        await world.idle()

        assert await note(world, "UADA", root, "threadline_reset", 3) == RESET_CONFIRM
        assert len(await transcript(world, root)) == 2  # nothing changed yet
        assert (await world.fake.click_note("UADA", "Reset this thread")).acked_in_time
        await world.fake.wait_for(lambda: len(world.fake.ephemerals("UADA")) == 4, WAIT)
        assert world.fake.ephemerals("UADA")[-1] == RESET_DONE
        assert await transcript(world, root) == []


@MODES
async def test_shortcuts_refused_outside_a_bot_thread_or_unknown_get_a_private_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    denied = {"access": {"deny_users": ["slack:UGRACE"]}}
    async with slack_world(tmp_path, monkeypatch, mode=mode, **denied) as world:  # type: ignore[arg-type]
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} hello")
        await world.answered(root)
        assert await note(world, "UGRACE", root, "threadline_quiet", 1) == CANNOT
        assert await note(world, "UGRACE", root, "threadline_stop", 2) == STOP_REFUSED
        assert await note(world, "UGRACE", root, "threadline_reset", 3) == CANNOT

        people = await world.fake.say("UADA", "CGENERAL", "no bot here")
        assert await note(world, "UADA", people, "threadline_status", 1) == NOT_OURS
        bots = await world.fake.other_bot_says("CGENERAL", "another app's thread")
        assert await note(world, "UADA", bots, "threadline_reset", 2) == NOT_OURS
        assert await note(world, "UADA", root, "threadline_dance", 3) == UNKNOWN_SHORTCUT
        assert len(await transcript(world, root)) == 1  # nothing changed in the thread
        assert world.fake.ephemerals("UGRACE") == [CANNOT, STOP_REFUSED, CANNOT]


async def test_quiet_and_listen_as_slash_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with slack_world(tmp_path, monkeypatch) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} hello")
        await world.answered(root)
        call = await world.fake.slash("UADA", "CGENERAL", "quiet")
        await world.fake.wait_for(lambda: bool(call.answers), WAIT)
        assert call.shown[0].endswith(QUIET)
        await said(world, "UGRACE", root, "unheard")
        assert len(world.fake.replies("CGENERAL", root.ts)) == 1
        call = await world.fake.slash("UADA", "CGENERAL", "listen")
        await world.fake.wait_for(lambda: bool(call.answers), WAIT)
        assert call.shown[0].endswith(LISTENING)
