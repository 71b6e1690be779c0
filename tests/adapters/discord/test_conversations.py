"""Conversations: a mention opens a thread, the thread continues without mentions, DMs work."""

from __future__ import annotations

from bot.llm.messages import UserMessage
from bot.thread.history import HEAD
from tests.adapters.discord.conftest import Discord, GatedModel
from tests.fakes.scripted_model import ScriptedModel, text


async def test_a_mention_in_a_channel_opens_a_thread_and_streams_the_reply_there(
    discord_world: Discord,
) -> None:
    model = ScriptedModel([text("Hello ", "Ada, ", "nice to ", "meet you.")])
    gated = GatedModel(model)
    await discord_world.start(model=gated)
    d = discord_world
    asked = d.fake.say(d.channel, d.ada, d.mention("hi there, who are you?"))

    thread = await d.thread_of(asked)
    await d.wait_for(lambda: d.fake.world.channels[thread.id].typing >= 1)  # "is typing…"
    gated.gate.set()
    await d.shows(thread, ["Hello Ada, nice to meet you."])

    assert thread.id == asked.id and thread.parent_id == d.channel.id
    assert thread.name == "hi there, who are you?"
    assert d.fake.world.shown(d.channel.id) == []  # nothing in the channel itself
    first = model.requests[0].messages[-1]
    assert isinstance(first, UserMessage)
    assert (first.text, first.author_name, first.author_id) == (
        "hi there, who are you?",
        "Ada L.",
        f"discord:{d.ada.id}",
    )


async def test_later_messages_in_the_thread_continue_without_a_mention(running: Discord) -> None:
    d = running
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("first")))
    await d.shows(thread, ["Ada L. said: first"])

    d.fake.say(thread, d.bob, "second, from Bob")
    await d.shows(thread, ["Ada L. said: first", "Bob said: second, from Bob"])


async def test_unmentioned_messages_elsewhere_are_not_answered(running: Discord) -> None:
    d = running
    d.fake.say(d.channel, d.ada, "just chatting")
    quiet = d.fake.world.add_thread(d.channel, "people only", d.bob)
    d.fake.say(quiet, d.bob, "no bot here")
    marker = d.fake.say(d.channel, d.ada, d.mention("now you"))
    thread = await d.thread_of(marker)
    await d.shows(thread, ["Ada L. said: now you"])

    assert d.fake.world.shown(d.channel.id) == []
    assert d.fake.world.shown(quiet.id) == []


async def test_a_mention_inside_an_existing_thread_starts_a_session_there(running: Discord) -> None:
    d = running
    thread = d.fake.world.add_thread(d.channel, "planning", d.bob)
    d.fake.say(thread, d.bob, "before the bot was asked")
    d.fake.say(thread, d.bob, d.mention("what do you think?"))
    await d.shows(thread, ["Bob said: what do you think?"])
    first = next(m for m in d.model.requests[0].messages if isinstance(m, UserMessage))
    assert (
        first.earlier == f"{HEAD}\n[Bob]: before the bot was asked"
    )  # read once, with the mention
    assert d.fake.world.messages  # no new thread was opened from the message
    assert all(m.thread_id is None for m in d.fake.world.in_channel(thread.id))

    d.fake.say(thread, d.ada, "and now without mention")
    await d.shows(thread, ["Bob said: what do you think?", "Ada L. said: and now without mention"])
    later = [m for m in d.model.requests[-1].messages if isinstance(m, UserMessage)]
    assert [m.earlier is not None for m in later] == [True, False]


async def test_direct_messages_are_answered_without_a_mention(running: Discord) -> None:
    d = running
    dm = d.fake.world.open_dm(d.ada)
    d.fake.say(dm, d.ada, "hello in private")
    await d.shows(dm, ["Ada said: hello in private"])
    d.fake.say(dm, d.ada, "and again")
    await d.shows(dm, ["Ada said: hello in private", "Ada said: and again"])


async def test_other_bots_webhooks_and_its_own_messages_are_ignored(running: Discord) -> None:
    d = running
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("start")))
    await d.shows(thread, ["Ada L. said: start"])

    other_bot = d.fake.world.add_user("Helper", guild=d.guild, bot=True)
    d.fake.say(thread, other_bot, d.mention("bots talk too"))
    d.fake.say(thread, d.ada, d.mention("from a webhook"), webhook=True)
    d.fake.say(d.channel, other_bot, d.mention("a bot mention in the channel"))
    d.fake.say(thread, d.ada, "the person again")
    await d.shows(thread, ["Ada L. said: start", "Ada L. said: the person again"])
    assert all(m.thread_id is None for m in d.fake.world.in_channel(d.channel.id)[1:])


async def test_mentions_of_others_reach_the_model_as_names_not_ids(discord_world: Discord) -> None:
    d = discord_world
    role = d.fake.world.add_role(d.guild, "ops")  # known to the bot from GUILD_CREATE
    model = ScriptedModel([text("ok")])
    await d.start(model=model)
    thread = await d.thread_of(
        d.fake.say(
            d.channel,
            d.ada,
            f"<@{d.bot.id}>, ask <@{d.bob.id}> and <@&{role.id}> in <#{d.channel.id}>",
        )
    )
    await d.shows(thread, ["ok"])
    first = model.requests[0].messages[-1]
    assert isinstance(first, UserMessage)
    assert first.text == "ask @Bob and @ops in #general"
