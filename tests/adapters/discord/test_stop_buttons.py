"""A Stop button left behind by a run a restart cut off is removed, and the text kept."""

from __future__ import annotations

from bot.api.surface import Button
from tests.adapters.discord.conftest import Discord


async def test_a_leftover_stop_button_is_removed_and_the_text_kept(running: Discord) -> None:
    d = running
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("hello")))
    await d.shows(thread, ["Ada L. said: hello"])
    assert d.adapter is not None
    surface = d.adapter.listeners.surface(thread.id, d.guild.id)
    try:
        posted = await surface.post("a half answer", (Button("stop:gone", "Stop", "danger"),))
        message = d.fake.world.message(thread.id, int(posted))
        assert message.components
        await surface.drop_buttons(posted)
    finally:
        await surface.aclose()
    assert message.components == [] and message.content == "a half answer"
