"""After a new gateway session, what was posted while the bot could not see is answered: once,
in order, and not again after the next restart."""

from __future__ import annotations

import asyncio

from bot.llm.messages import UserMessage
from tests.adapters.discord.conftest import WITHIN, Discord
from tests.fakes.discord import Channel
from tests.fakes.scripted_model import ScriptedModel


async def caught_up(d: Discord) -> None:
    """Wait until the current session's catch-up has gone through the guild."""
    assert d.adapter is not None
    await asyncio.wait_for(d.adapter.listeners.catch_up.passed(d.guild.id).wait(), WITHIN)
    await d.idle()


def asked(model: ScriptedModel) -> list[str]:
    """The newest user message of each model request, in order."""
    found = []
    for request in model.requests:
        last = [m for m in request.messages if isinstance(m, UserMessage)][-1]
        found.append(last.text)
    return found


async def conversation(d: Discord) -> Channel:
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("first")))
    await d.shows(thread, ["Ada L. said: first"])
    return thread


async def test_a_message_posted_while_the_bot_was_down_is_answered_once_it_is_back(
    running: Discord,
) -> None:
    d = running
    thread = await conversation(d)
    await d.stop()
    d.fake.say(thread, d.bob, "anyone there?")  # nobody is connected: no event reaches anyone

    await d.start()
    await d.shows(thread, ["Ada L. said: first", "Bob said: anyone there?"])
    await caught_up(d)

    await d.start()  # and again: already answered
    await caught_up(d)
    assert d.fake.world.shown(thread.id) == ["Ada L. said: first", "Bob said: anyone there?"]
    assert d.adapter is not None and d.adapter.listeners.catch_up.tally.started == 0


async def test_messages_from_the_outage_come_first_and_in_order(discord_world: Discord) -> None:
    d = discord_world
    model = d.model
    await d.start(during_run="queue")
    thread = await conversation(d)
    await d.stop()
    d.fake.say(thread, d.ada, "one")
    d.fake.say(thread, d.bob, "two")

    await d.start()
    d.fake.say(thread, d.ada, "three")  # live, before the session's catch-up has begun
    await d.shows(
        thread, ["Ada L. said: first", "Ada L. said: one", "Bob said: two", "Ada L. said: three"]
    )
    await caught_up(d)
    assert asked(model) == ["first", "one", "two", "three"]


async def test_a_resume_refused_by_discord_is_caught_up_in_the_same_process(
    running: Discord,
) -> None:
    d = running
    thread = await conversation(d)
    await caught_up(d)
    quiet = d.fake.world.add_thread(d.channel, "people only", d.bob)
    d.fake.say(quiet, d.bob, "not for the bot")

    d.fake.gateway.refuse_resume = True
    await d.fake.gateway.drop()
    gap = d.fake.say(thread, d.ada, "in the gap")  # sent to the session Discord will not resume
    # discord.py identifies anew 5 s (of real time) later: Discord's identify limit
    await d.wait_for(
        lambda: len(d.fake.gateway.sessions) == 2 and d.fake.gateway.live_sessions(), 10
    )
    new = list(d.fake.gateway.sessions.values())[-1]
    assert all(f["d"].get("id") != str(gap.id) for f in new.events if f["t"] == "MESSAGE_CREATE")

    await d.shows(thread, ["Ada L. said: first", "Ada L. said: in the gap"])
    await caught_up(d)
    assert d.fake.world.shown(quiet.id) == []


async def test_a_mention_in_a_channel_while_the_bot_was_down_opens_its_thread(
    running: Discord,
) -> None:
    d = running
    await d.stop()
    asked_while_down = d.fake.say(d.channel, d.ada, d.mention("are you up?"))
    d.fake.say(d.channel, d.bob, "people talking")

    await d.start()
    thread = await d.thread_of(asked_while_down)
    await d.shows(thread, ["Ada L. said: are you up?"])
    await caught_up(d)
    await d.start()
    await caught_up(d)
    assert d.fake.world.shown(thread.id) == ["Ada L. said: are you up?"]
    assert [c.id for c in d.fake.world.channels.values() if c.parent_id == d.channel.id] == [
        thread.id
    ]


async def test_what_the_bot_said_after_coming_back_does_not_hide_what_came_before(
    running: Discord,
) -> None:
    d = running
    thread = await conversation(d)
    other = await d.thread_of(d.fake.say(d.channel, d.bob, d.mention("elsewhere")))
    await d.shows(other, ["Bob said: elsewhere"])
    await d.stop()
    d.fake.say(thread, d.ada, "while you were away")
    d.fake.say(other, d.bob, "and here")

    await d.start()
    # Before the catch-up reaches it, the bot posts in the thread (as a run picked up after a
    # restart would): that is not an answer to what came before.
    assert d.adapter is not None
    await d.adapter.listeners.surface(thread.id, d.guild.id).post("Back online.")
    await d.shows(
        thread, ["Ada L. said: first", "Back online.", "Ada L. said: while you were away"]
    )
    await d.shows(other, ["Bob said: elsewhere", "Bob said: and here"])
    await caught_up(d)


async def test_threads_without_a_session_and_unmentioned_messages_are_left_alone(
    running: Discord,
) -> None:
    d = running
    thread = await conversation(d)
    quiet = d.fake.world.add_thread(d.channel, "people only", d.bob)
    await d.stop()
    d.fake.say(quiet, d.bob, "not for the bot")
    d.fake.say(d.channel, d.bob, "no mention either")

    await d.start()
    await caught_up(d)
    assert d.fake.world.shown(quiet.id) == [] and d.fake.world.shown(d.channel.id) == []
    assert d.fake.world.shown(thread.id) == ["Ada L. said: first"]
    reads = {r.channel_id for r in d.fake.requests("GET /api/v10/channels/{cid}/messages")}
    assert quiet.id not in reads  # no session there: its history is never read
