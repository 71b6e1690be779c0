"""First mentioned inside a thread that existed before, the bot reads what was said there (one
page of history on the fake Discord) and the model reads it with the mention; what the count
bound or the character bound left out is said, never with a made-up number."""

from __future__ import annotations

from bot.llm.messages import UserMessage
from bot.thread.history import HEAD
from tests.adapters.discord.conftest import Discord


def earlier_of(d: Discord) -> str | None:
    return next(m for m in d.model.requests[0].messages if isinstance(m, UserMessage)).earlier


async def test_a_thread_longer_than_the_count_bound_says_it_goes_back_further(
    discord_world: Discord,
) -> None:
    d = discord_world
    await d.start(thread_history_messages=3)
    thread = d.fake.world.add_thread(d.channel, "planning", d.bob)
    for n in range(6):
        d.fake.say(thread, d.bob, f"reply {n}")
    d.fake.say(thread, d.bob, d.mention("sum it up"))
    await d.shows(thread, ["Bob said: sum it up"])
    assert earlier_of(d) == "\n".join(
        [
            HEAD,
            "(… earlier messages not shown)",
            "[Bob]: reply 3",
            "[Bob]: reply 4",
            "[Bob]: reply 5",
        ]
    )


async def test_a_thread_within_the_count_bound_is_read_whole(discord_world: Discord) -> None:
    d = discord_world
    await d.start(thread_history_messages=3)
    thread = d.fake.world.add_thread(d.channel, "planning", d.bob)
    for n in range(3):
        d.fake.say(thread, d.bob, f"reply {n}")
    d.fake.say(thread, d.bob, d.mention("sum it up"))
    await d.shows(thread, ["Bob said: sum it up"])
    assert earlier_of(d) == "\n".join([HEAD, *(f"[Bob]: reply {n}" for n in range(3))])


async def test_the_character_bound_counts_what_it_left_out(discord_world: Discord) -> None:
    d = discord_world
    tail = "x" * 20
    await d.start(thread_history_messages=10, thread_history_chars=len(HEAD) + 80)
    thread = d.fake.world.add_thread(d.channel, "planning", d.bob)
    for n in range(5):
        d.fake.say(thread, d.bob, f"reply {n} {tail}")
    d.fake.say(thread, d.bob, d.mention("sum it up"))
    await d.shows(thread, ["Bob said: sum it up"])
    assert earlier_of(d) == "\n".join(
        [
            HEAD,
            "(… 3 earlier messages not shown)",
            f"[Bob]: reply 3 {tail}",
            f"[Bob]: reply 4 {tail}",
        ]
    )

    await d.start(thread_history_messages=2, thread_history_chars=len(HEAD) + 40)
    d.model.requests.clear()
    again = d.fake.world.add_thread(d.channel, "again", d.bob)
    for n in range(5):
        d.fake.say(again, d.bob, f"reply {n} {tail}")
    d.fake.say(again, d.bob, d.mention("and here?"))
    await d.shows(again, ["Bob said: and here?"])
    assert earlier_of(d) == "\n".join(
        [HEAD, "(… more than 1 earlier messages not shown)", f"[Bob]: reply 4 {tail}"]
    )
