"""Text that is not valid Unicode (a lone surrogate, which JSON may carry as ``\\ud800``) is
answered, live and when the catch-up after a reconnect finds it."""

from __future__ import annotations

from bot.llm.messages import UserMessage
from tests.adapters.discord.conftest import Discord
from tests.adapters.discord.test_catch_up import caught_up


async def test_a_message_with_a_lone_surrogate_is_answered(running: Discord) -> None:
    d = running
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("bad \ud800 end")))
    await d.shows(thread, ["Ada L. said: bad \ufffd end"])
    asked = d.model.requests[0].messages[-1]
    assert isinstance(asked, UserMessage) and asked.text == "bad \ufffd end"


async def test_one_the_catch_up_finds_is_answered_once(running: Discord) -> None:
    d = running
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("first")))
    await d.shows(thread, ["Ada L. said: first"])
    await d.stop()
    d.fake.say(thread, d.bob, "while away \udc80")  # nobody is connected: no event reaches anyone

    await d.start()
    expected = ["Ada L. said: first", "Bob said: while away \ufffd"]
    await d.shows(thread, expected)
    await caught_up(d)
    await d.start()  # and again: already answered, not tried again
    await caught_up(d)
    assert d.fake.world.shown(thread.id) == expected
    assert d.adapter is not None and d.adapter.listeners.catch_up.tally.started == 0
