"""``/threadline`` on Slack through the real slack-bolt and slack_sdk against the fake Slack: the
command is acknowledged within Slack's 3 s, works on the thread it names (a message link) or
the latest active one of the channel, and its answer reaches the person alone, through the
command's ``response_url`` (``chat.postEphemeral`` when that is refused)."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.slack.commands import NO_THREAD, OTHER_CHANNEL, RESET_NEEDS_LINK
from bot.api.commands import RESET_DONE
from bot.api.inbound import ThreadKey
from tests.adapters.slack.conftest import HeldModel, World, slack_world
from tests.fakes.scripted_model import ScriptedModel, text
from tests.fakes.slack import MENTION, Message
from tests.fakes.slack.commands import SlashCall

WAIT = 30.0


def link(message: Message, *, reply_of: Message | None = None) -> str:
    """What Slack's "Copy link" gives for ``message`` (a reply's link names its thread)."""
    url = f"https://fake.slack.com/archives/{message.channel}/p{message.ts.replace('.', '')}"
    return f"{url}?thread_ts={reply_of.ts}&cid={message.channel}" if reply_of else url


async def answer(world: World, user: str, channel: str, text: str) -> str:
    """Type ``/threadline {text}``; the one answer the person sees."""
    call = await world.fake.slash(user, channel, text)
    assert call.delivery is not None and call.delivery.acked_in_time
    await world.fake.wait_for(lambda: bool(call.answers), WAIT)
    await world.idle()
    assert call.answers[0]["response_type"] == "ephemeral"
    return "\n".join(call.shown)


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_status_of_the_latest_thread_and_a_model_for_one_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    async with slack_world(tmp_path, monkeypatch, mode=mode) as world:  # type: ignore[arg-type]
        assert await answer(world, "UADA", "CGENERAL", "status") == NO_THREAD
        first = await world.fake.say("UADA", "CGENERAL", f"{MENTION} hello")
        await world.answered(first)
        second = await world.fake.say("UGRACE", "CGENERAL", f"{MENTION} morning")
        await world.answered(second)

        status = await answer(world, "UADA", "CGENERAL", "status")
        assert status.startswith("_About the latest active thread here, from ")
        assert "Model: scripted model" in status and "Messages: 2" in status

        chosen = await answer(world, "UADA", "CGENERAL", f"model big-model {link(first)}")
        assert chosen == "This thread now uses big-model; other threads are unchanged."
        await world.fake.say("UADA", "CGENERAL", "and now?", thread_ts=first.ts)
        await world.answered(first, 2, WAIT)
        await world.fake.say("UGRACE", "CGENERAL", "and here?", thread_ts=second.ts)
        await world.answered(second, 2, WAIT)
        assert [r.model for r in world.model.requests] == [None, None, "big-model", None]
        assert world.fake.ephemerals("UGRACE") == []  # nobody else saw a word of it
        assert [m.shown for m in world.fake.thread("CGENERAL", first.ts)][
            -1
        ] == "Ada said: and now?"


async def test_reset_needs_the_threads_link_and_forgets_that_thread_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with slack_world(tmp_path, monkeypatch) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} remember the number 7")
        replies = await world.answered(root)
        other = await world.fake.say("UADA", "CGENERAL", f"{MENTION} a second thread")
        await world.answered(other)
        assert await answer(world, "UADA", "CGENERAL", "reset") == RESET_NEEDS_LINK
        # a link to the bot's reply inside the thread names the thread too
        said = await answer(world, "UADA", "CGENERAL", f"reset <{link(replies[0], reply_of=root)}>")
        assert said == RESET_DONE
        assert world.runtime is not None
        core = world.runtime.core
        session = await core.store.load_session(ThreadKey(f"slack:T0FAKE:CGENERAL:{root.ts}"), 0)
        assert session.messages == []
        kept = await core.store.load_session(ThreadKey(f"slack:T0FAKE:CGENERAL:{other.ts}"), 0)
        assert len(kept.messages) == 2


async def test_stop_reaches_the_run_going_on_in_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = HeldModel(ScriptedModel([text("Working on it", " — done")]), hold_after=1)
    async with slack_world(tmp_path, monkeypatch, model=model) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} a long task")
        await world.fake.wait_for(
            lambda: any(
                "Working on it" in m.shown for m in world.fake.replies("CGENERAL", root.ts)
            ),
            WAIT,
        )
        call = await world.fake.slash("UGRACE", "CGENERAL", f"stop {link(root)}")
        await world.fake.wait_for(lambda: bool(call.answers), WAIT)
        assert call.shown == ["Stopping the run in this thread."]
        model.release()
        await world.idle()
        assert (
            await answer(world, "UGRACE", "CGENERAL", f"stop {link(root)}")
            == "Nothing is running in this thread."
        )


async def test_bad_commands_are_answered_with_what_is_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with slack_world(tmp_path, monkeypatch) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} hi")
        await world.answered(root)
        assert (await answer(world, "UADA", "CGENERAL", "")).startswith("Say what to do:")
        unknown = await answer(world, "UADA", "CGENERAL", "deploy prod")
        assert (
            unknown.startswith("I don't know `deploy`. I know:") and "/threadline model" in unknown
        )
        assert await answer(world, "UADA", "CGENERAL", "status now") == (
            "`status` takes nothing after it.\n" + unknown.split("\n", 1)[1]
        )
        elsewhere = root.ts.replace(".", "")
        said = await answer(
            world, "UADA", "CGENERAL", f"status https://x.slack.com/archives/CRANDOM/p{elsewhere}"
        )
        assert said == OTHER_CHANNEL
        forgot = await answer(world, "UADA", "CGENERAL", "memory forget m9")
        assert (
            forgot.startswith("_About the latest active thread here")
            and "Nothing changed: there is no memory 'm9' here" in forgot
        )


async def test_a_refused_response_url_falls_back_to_an_ephemeral_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with slack_world(tmp_path, monkeypatch) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} hi")
        await world.answered(root)
        world.fake.responses.expired = True
        call: SlashCall = await world.fake.slash("UADA", "CGENERAL", "schedules")
        await world.fake.wait_for(lambda: bool(world.fake.ephemerals("UADA")), WAIT)
        await world.idle()
        assert call.answers == [] and call.refused == ["expired_url"]
        assert "No scheduled prompts in this thread." in world.fake.ephemerals("UADA")[0]
