"""👍 / 👎 under an answer on Discord, through discord.py against the fake: two small buttons,
a click kept once per person, a 👎 answered with a "what went wrong?" modal whose sending is
kept (and answered plainly once the thread was reset)."""

from __future__ import annotations

from bot.feedback.service import GONE, THANKS
from tests.adapters.discord.conftest import Discord
from tests.fakes.discord import Message
from tests.fakes.discord.rest import EPHEMERAL
from tests.fakes.discord.server import MODAL
from tests.fakes.scripted_model import ScriptedModel, text


def buttons(message: Message) -> list[dict[str, object]]:
    return [c for row in message.components for c in row["components"]]


async def answered(d: Discord, words: str) -> tuple[int, Message]:
    await d.start(model=ScriptedModel([text("Deploy with `make ship`.")]), feedback=True)
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention(words)))
    await d.wait_for(lambda: len(d.fake.world.shown(thread.id)) >= 2)
    await d.idle()
    shown = [m for m in d.fake.world.in_channel(thread.id) if m.author.id == d.bot.id]
    assert shown[0].content == "Deploy with `make ship`."
    return thread.id, shown[-1]


async def stored(d: Discord) -> list[tuple[str, str, str]]:
    assert d.core is not None
    return [(f.user_name, f.value, f.note) for f in await d.core.store.feedback_since(0.0, 10)]


async def test_two_small_buttons_and_a_second_click_counts_once(discord_world: Discord) -> None:
    d = discord_world
    _, thumbs = await answered(d, "how do I deploy?")
    assert [(b["label"], b["style"]) for b in buttons(thumbs)] == [("👍", 2), ("👎", 2)]
    up = str(buttons(thumbs)[0]["custom_id"])

    first = d.fake.click(thumbs, up, d.ada)
    await d.wait_for(lambda: first.callbacks)
    second = d.fake.click(thumbs, up, d.ada)
    await d.wait_for(lambda: second.callbacks)
    await d.idle()
    assert first.callbacks == [{"type": 6}] and first.followups == []
    assert await stored(d) == [("Ada L.", "up", "")]


async def test_a_thumbs_down_asks_what_went_wrong_in_a_modal(discord_world: Discord) -> None:
    d = discord_world
    _, thumbs = await answered(d, "how do I deploy?")
    down = str(buttons(thumbs)[1]["custom_id"])

    clicked = d.fake.click(thumbs, down, d.ada)
    await d.wait_for(lambda: clicked.callbacks)
    await d.idle()
    assert clicked.callbacks[0]["type"] == MODAL
    assert clicked.callbacks[0]["data"]["title"] == "What went wrong?"

    sent = d.fake.submit_modal(clicked, d.ada, "There is no make ship target")
    await d.wait_for(lambda: sent.followups)
    await d.idle()
    assert sent.followups[0]["content"] == THANKS and sent.followups[0]["flags"] == EPHEMERAL
    assert await stored(d) == [("Ada L.", "down", "There is no make ship target")]


async def test_a_modal_sent_after_a_reset_is_answered_plainly(discord_world: Discord) -> None:
    d = discord_world
    thread_id, thumbs = await answered(d, "how do I deploy?")
    clicked = d.fake.click(thumbs, str(buttons(thumbs)[1]["custom_id"]), d.ada)
    await d.wait_for(lambda: clicked.callbacks)
    await d.idle()
    assert d.core is not None and d.adapter is not None
    surface = d.adapter.listeners.surface(thread_id, d.guild.id)
    await d.core.reset(surface.thread_key, surface)

    sent = d.fake.submit_modal(clicked, d.ada, "too late")
    await d.wait_for(lambda: sent.followups)
    assert sent.followups[0]["content"] == GONE
    assert await stored(d) == [("Ada L.", "down", "")]
