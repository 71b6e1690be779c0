"""Edits on Discord (``MESSAGE_UPDATE``), through the real discord.py against the fake Discord:
a person's edit of the message the bot just answered — the mention that opened the thread, or a
message in it — replaces the answer and answers the new text; an edit after someone else wrote,
and one of a message the bot never answered, change nothing and open no thread."""

from __future__ import annotations

from bot.llm.messages import UserMessage
from tests.adapters.discord.conftest import Discord

REPLACED = "Replaced: the message this answered was edited"


def shown(d: Discord, channel_id: int) -> list[str]:
    return d.fake.world.shown(channel_id)


async def test_an_edit_replaces_the_answer_and_answers_the_new_text(running: Discord) -> None:
    d = running
    question = d.fake.say(d.channel, d.ada, d.mention("capital of France?"))
    thread = await d.thread_of(question)
    await d.shows(thread, ["Ada L. said: capital of France?"])

    d.fake.edit(question, d.mention("capital of Italy?"))  # the message that opened the thread
    await d.wait_for(lambda: len(shown(d, thread.id)) == 2)
    await d.idle()
    old, new = shown(d, thread.id)
    assert REPLACED in old and new == "Ada L. said: capital of Italy?"
    asked = [m for m in d.model.requests[-1].messages if isinstance(m, UserMessage)]
    assert [m.text for m in asked] == ["capital of Italy?"]

    follow_up = d.fake.say(thread, d.ada, "and of Spain?")  # a message in the thread
    await d.wait_for(lambda: len(shown(d, thread.id)) == 3)
    d.fake.edit(follow_up, "and of Portugal?")
    await d.wait_for(lambda: shown(d, thread.id)[-1] == "Ada L. said: and of Portugal?")
    await d.idle()
    assert REPLACED in shown(d, thread.id)[2]
    assert len(d.model.requests) == 4


async def test_edits_that_change_nothing(running: Discord) -> None:
    d = running
    question = d.fake.say(d.channel, d.ada, d.mention("capital of France?"))
    thread = await d.thread_of(question)
    await d.shows(thread, ["Ada L. said: capital of France?"])
    d.fake.say(thread, d.bob, "what about Spain?")
    await d.shows(thread, ["Ada L. said: capital of France?", "Bob said: what about Spain?"])
    unseen = d.fake.say(d.channel, d.bob, "people talking")  # never for the bot
    channels = len(d.fake.world.channels)
    d.fake.edit(question, d.mention("capital of Peru?"))  # Bob wrote since
    d.fake.edit(unseen, f"people talking, edited {d.mention()}")
    later = d.fake.say(d.channel, d.ada, d.mention("one more"))  # routed after the edits
    await d.shows(await d.thread_of(later), ["Ada L. said: one more"])
    assert len(d.fake.world.channels) == channels + 1, "the edit opened no thread"
    assert d.fake.world.messages[unseen.id].thread_id is None
    assert shown(d, thread.id) == ["Ada L. said: capital of France?", "Bob said: what about Spain?"]
    assert len(d.model.requests) == 3
