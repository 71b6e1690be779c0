"""Who may click Stop on Discord: a person on the deny list is told privately that they may
not, and the run goes on to its end; the same for ``/threadline stop``."""

from __future__ import annotations

from bot.api.commands import CANNOT
from bot.config import AccessSettings
from bot.core import STOP_REFUSED
from tests.adapters.discord.conftest import Discord, PuppetModel
from tests.fakes.discord import Message
from tests.fakes.discord.rest import EPHEMERAL


def stop_buttons(d: Discord, channel_id: int) -> list[tuple[Message, str]]:
    return [
        (m, str(b["custom_id"]))
        for m in d.fake.world.in_channel(channel_id)
        for row in m.components
        for b in row["components"]
        if b.get("label") == "Stop"
    ]


async def test_a_stop_click_by_a_denied_person_is_refused_and_the_run_goes_on(
    discord_world: Discord,
) -> None:
    d = discord_world
    puppet = PuppetModel()
    await d.start(model=puppet, access=AccessSettings(deny_users=[f"discord:{d.bob.id}"]))
    thread = d.fake.world.add_thread(d.channel, "long", d.ada)
    d.fake.say(thread, d.ada, d.mention("talk for a while"))
    puppet.say("Let me think about this at length")
    await d.wait_for(lambda: stop_buttons(d, thread.id))

    message, stop = stop_buttons(d, thread.id)[0]
    clicked = d.fake.click(message, stop, d.bob)
    await d.wait_for(lambda: clicked.followups)
    assert clicked.followups[0]["flags"] == EPHEMERAL
    assert clicked.followups[0]["content"] == STOP_REFUSED
    command = d.fake.slash(thread, d.bob, "threadline", "stop")
    await d.wait_for(lambda: command.followups)
    assert command.followups[0]["content"] == CANNOT

    puppet.say(", and here is the end.")
    puppet.end()
    await d.shows(thread, ["Let me think about this at length, and here is the end."])
    assert "Stopped by" not in "".join(d.fake.world.shown(thread.id))
