"""Streaming within Discord's limits: buckets, 429s, long replies, refused edits, mentions."""

from __future__ import annotations

from adapters.discord.render import render
from adapters.discord.surface import SPLIT_AT
from bot.present.split import split_message
from tests.adapters.discord.conftest import Discord, PacedModel, PuppetModel
from tests.fakes.discord.limits import MESSAGES
from tests.fakes.discord.rest import Call
from tests.fakes.scripted_model import ScriptedModel, text


def message_calls(d: Discord, channel_id: int) -> list[Call]:
    return [
        c
        for c in d.fake.requests("/messages", channel_id)
        if c.route.endswith("/messages") or c.route.endswith("{mid}")
    ]


async def test_a_long_stream_never_hits_the_channel_bucket(discord_world: Discord) -> None:
    d = discord_world
    pieces = [f"word{i} " for i in range(60)]
    await d.start(model=PacedModel(d.clock, pieces, gap=0.25))  # 15 s of streaming
    thread = d.fake.world.add_thread(d.channel, "stream", d.ada)
    d.fake.say(thread, d.ada, d.mention("go"))

    await d.shows(thread, ["".join(pieces).strip()], within=10)

    assert d.fake.limits.count_429 == 0
    edits = [c for c in d.fake.requests("PATCH", thread.id) if c.route.endswith("{mid}")]
    assert len(edits) >= 4  # it really streamed
    gaps = [b.at - a.at for a, b in zip(edits, edits[1:], strict=False)]
    assert min(gaps[:-1]) >= 1.9  # 30 interim edits a minute: 3 in any 5 s, room left for posts
    # the final edit takes the one kept in hand and does not wait for the 2 s; still no 429


async def test_429s_on_edits_still_end_with_the_exact_final_text(discord_world: Discord) -> None:
    d = discord_world
    puppet = PuppetModel()
    await d.start(model=puppet)
    thread = d.fake.world.add_thread(d.channel, "storm", d.ada)
    d.fake.say(thread, d.ada, d.mention("go"))
    puppet.say("Hello")
    await d.wait_for(lambda: d.fake.world.shown(thread.id) == ["Hello"])

    d.fake.limits.storm(MESSAGES, str(thread.id), count=4, retry_after=1.5)
    puppet.say(", world", " and everyone in it.")
    puppet.end()
    await d.shows(thread, ["Hello, world and everyone in it."], within=10)

    assert [r.retry_after for r in d.fake.limits.refusals] == [1.5] * 4
    refused = [c for c in d.fake.rest.calls if c.status == 429]
    assert len(refused) == 4
    assert all(c.route.endswith("{mid}") for c in refused)


async def test_429s_on_the_first_post_are_retried(discord_world: Discord) -> None:
    d = discord_world
    await d.start(model=ScriptedModel([text("first words")]))
    thread = d.fake.world.add_thread(d.channel, "storm", d.ada)
    d.fake.limits.storm(MESSAGES, str(thread.id), count=2, retry_after=0.5)
    d.fake.say(thread, d.ada, d.mention("go"))
    await d.shows(thread, ["first words"])
    assert d.fake.limits.count_429 == 2


async def test_a_reply_over_2000_characters_continues_without_breaking_a_code_block(
    discord_world: Discord,
) -> None:
    code = "\n".join(f"    print('line {i}')  # {'x' * 40}" for i in range(80))
    reply = f"Here is the script:\n\n```python\ndef main():\n{code}\n```\n\nThat is all."
    d = discord_world
    await d.start(model=ScriptedModel([text(reply[:1000], reply[1000:3000], reply[3000:])]))
    thread = d.fake.world.add_thread(d.channel, "long", d.ada)
    d.fake.say(thread, d.ada, d.mention("write it"))

    expected = split_message(render(reply), SPLIT_AT)
    await d.shows(thread, expected, within=10)

    assert len(expected) >= 3
    for chunk in expected:
        assert len(chunk) <= 2000
        assert sum(1 for line in chunk.split("\n") if line.startswith("```")) % 2 == 0
    assert expected[1].startswith("```python\n")


async def test_an_edit_refused_as_too_old_is_posted_anew(discord_world: Discord) -> None:
    d = discord_world
    puppet = PuppetModel()
    await d.start(model=puppet)
    thread = d.fake.world.add_thread(d.channel, "old", d.ada)
    d.fake.say(thread, d.ada, d.mention("go"))
    puppet.say("Started an hour ago")
    await d.wait_for(lambda: d.fake.world.shown(thread.id) == ["Started an hour ago"])
    first = d.fake.world.in_channel(thread.id)[-1]
    first.created_at -= 3700  # Discord now refuses its edits (30046)

    puppet.say(", finished now.")
    puppet.end()
    await d.shows(thread, ["Started an hour ago, finished now."])

    assert first.deleted
    assert any(
        c.status == 400 and c.route.endswith("{mid}") for c in d.fake.requests("PATCH", thread.id)
    )


async def test_an_archived_thread_is_reopened_and_the_edit_lands(discord_world: Discord) -> None:
    d = discord_world
    puppet = PuppetModel()
    await d.start(model=puppet)
    thread = d.fake.world.add_thread(d.channel, "archived", d.ada)
    d.fake.say(thread, d.ada, d.mention("go"))
    puppet.say("Before")
    await d.wait_for(lambda: d.fake.world.shown(thread.id) == ["Before"])
    d.fake.world.set_archived(thread.id, True)  # auto-archived while the model thought

    puppet.say(" and after.")
    puppet.end()
    await d.shows(thread, ["Before and after."])

    assert not d.fake.world.channels[thread.id].archived
    assert [
        c.body
        for c in d.fake.requests("PATCH /api/v10/channels/{cid}", thread.id)
        if c.route.endswith("{cid}")
    ] == [{"archived": False}]
    assert len(d.fake.world.in_channel(thread.id)) == 2  # the question and one reply: nothing lost


async def test_mass_mentions_and_roles_never_ping(discord_world: Discord) -> None:
    d = discord_world
    role = d.fake.world.add_role(d.guild, "admins")
    shout = f"Attention @everyone and @here, <@&{role.id}> and <@{d.bob.id}>: `@everyone` in code."
    await d.start(model=ScriptedModel([text(shout)]))
    thread = d.fake.world.add_thread(d.channel, "loud", d.ada)
    d.fake.say(thread, d.ada, d.mention("shout"))

    expected = shout.replace("@everyone and @here", "@\u200beveryone and @\u200bhere")
    await d.shows(thread, [expected])

    sends = [c for c in message_calls(d, thread.id) if c.method in ("POST", "PATCH")]
    assert sends
    for call in sends:
        assert call.body["allowed_mentions"] == {"parse": []}


async def test_markdown_is_rendered_for_discord_in_the_thread(discord_world: Discord) -> None:
    d = discord_world
    reply = "#### Result\n\n| a | b |\n|---|---|\n| 1 | 22 |\n\n__done__"
    await d.start(model=ScriptedModel([text(reply)]))
    thread = d.fake.world.add_thread(d.channel, "md", d.ada)
    d.fake.say(thread, d.ada, d.mention("table please"))
    await d.shows(thread, ["### Result\n\n```\na | b\n--+---\n1 | 22\n```\n\n**done**"])


async def test_a_locked_thread_fails_plainly_instead_of_retrying_forever(
    discord_world: Discord,
) -> None:
    d = discord_world
    puppet = PuppetModel()
    await d.start(model=puppet)
    thread = d.fake.world.add_thread(d.channel, "locked", d.ada)
    d.fake.say(thread, d.ada, d.mention("go"))
    await d.wait_for(lambda: d.fake.world.channels[thread.id].typing >= 1)
    d.fake.world.set_archived(thread.id, True, locked=True)  # a moderator closed it
    puppet.say("nobody will see this")
    puppet.end()
    await d.idle()

    assert d.fake.world.shown(thread.id) == []
    posts = [c for c in d.fake.requests("POST", thread.id) if c.route.endswith("/messages")]
    assert len(posts) in range(1, 9)  # a few tries, then the run fails; no endless loop
