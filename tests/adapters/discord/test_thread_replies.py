"""Threads that answer mentions only, quiet threads, and the shortcuts as message commands, on
Discord through the real discord.py against the fake Discord.

With ``thread_replies = "mentions"`` a thread of the bot answers only messages that mention it;
the others are kept and reach the model, with their authors, with the next mention. The message
commands (a message's Apps menu) stop, show the status, quiet a thread (or bring it back) and
reset it after a confirm button, privately.
"""

from __future__ import annotations

from adapters.discord.identity import thread_key
from bot.api.commands import CANNOT, RESET_DONE, STOPPED
from bot.api.shortcuts import SHORTCUTS
from bot.config import AccessSettings, ChannelSettings
from bot.core import NOT_OURS, RESET_CONFIRM, STOP_REFUSED
from bot.llm.messages import UserMessage
from bot.thread.operations import LISTENING, QUIET
from tests.adapters.discord.conftest import Discord, PuppetModel
from tests.fakes.discord.model import Interaction
from tests.fakes.discord.rest import EPHEMERAL

STOP, STATUS, QUIETEN, RESET = (SHORTCUTS[s][0] for s in ("stop", "status", "quiet", "reset"))


async def private(d: Discord, used: Interaction) -> str:
    """The one private note a message command or a click brought."""
    await d.wait_for(lambda: used.followups)
    await d.idle()
    assert len(used.followups) == 1 and used.followups[0]["flags"] == EPHEMERAL
    return str(used.followups[0]["content"])


def kept(d: Discord) -> list[UserMessage]:
    return [m for r in d.model.requests[-1:] for m in r.messages if isinstance(m, UserMessage)]


async def test_a_mentions_only_server_keeps_the_others_for_the_next_mention(
    discord_world: Discord,
) -> None:
    d = discord_world
    mentions = {f"discord:{d.guild.id}": ChannelSettings(thread_replies="mentions")}
    await d.start(channels=mentions)
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("watch the deploy")))
    await d.shows(thread, ["Ada L. said: watch the deploy"])
    d.fake.say(thread, d.bob, "the build is red on main")
    await d.idle()
    assert d.fake.world.shown(thread.id) == ["Ada L. said: watch the deploy"]  # not answered

    d.fake.say(thread, d.ada, d.mention("what broke?"))
    await d.shows(thread, ["Ada L. said: watch the deploy", "Ada L. said: what broke?"])
    assert [(m.author_name, m.text, m.addressed) for m in kept(d)[-2:]] == [
        ("Bob", "the build is red on main", False),
        ("Ada L.", "what broke?", True),
    ]
    dm = d.fake.world.open_dm(d.bob)  # a direct message is always answered
    d.fake.say(dm, d.bob, "hello")
    await d.shows(dm, ["Bob said: hello"])


async def test_the_message_commands_quiet_status_stop_and_a_confirmed_reset(
    discord_world: Discord,
) -> None:
    d = discord_world
    puppet = PuppetModel()
    await d.start(model=puppet)
    names = {c["name"]: c["type"] for c in d.fake.world.commands}
    assert {n: names.get(n) for n, _ in SHORTCUTS.values()} == {n: 3 for n, _ in SHORTCUTS.values()}
    puppet.say("Hi there")
    puppet.end()
    start = d.fake.say(d.channel, d.ada, d.mention("hello"))
    thread = await d.thread_of(start)
    await d.shows(thread, ["Hi there"])
    said = d.fake.world.in_channel(thread.id)[-1]

    used = d.fake.message_command(said, QUIETEN, d.bob)
    assert await private(d, used) == QUIET
    assert used.callbacks == [{"type": 5, "data": {"flags": EPHEMERAL}}]  # within the 3 s
    d.fake.say(thread, d.bob, "just us")
    await d.idle()  # a run would wait for the puppet's words: none came, none ran
    assert d.fake.world.shown(thread.id) == ["Hi there"]
    # on the message in the channel that started the thread: the same thread
    status = await private(d, d.fake.message_command(said, STATUS, d.ada))
    assert "Answers: only messages that mention me (this thread is quiet)" in status
    assert await private(d, d.fake.message_command(start, QUIETEN, d.ada)) == LISTENING
    status = await private(d, d.fake.message_command(said, STATUS, d.ada))
    assert "Messages: 3" in status and "Answers: every message" in status

    puppet.say("Talking")
    d.fake.say(thread, d.bob, "now talk for a while")
    await d.wait_for(lambda: "Talking" in "".join(d.fake.world.shown(thread.id)))
    assert await private(d, d.fake.message_command(said, STOP, d.bob)) == STOPPED["stopping"]
    await d.wait_for(lambda: "Stopped by Bob" in "".join(d.fake.world.shown(thread.id)))

    asked = d.fake.message_command(said, RESET, d.ada)
    assert await private(d, asked) == RESET_CONFIRM
    button = asked.followups[0]["components"][0]["components"][0]
    assert button["label"] == "Reset this thread"
    assert d.core is not None and await d.core.has_session(thread_key(d.guild.id, thread.id))
    clicked = d.fake.click_note(asked, "Reset this thread", d.ada)
    assert await private(d, clicked) == RESET_DONE
    status = await private(d, d.fake.message_command(said, STATUS, d.ada))
    assert "No conversation in this thread yet" in status


async def test_message_commands_refused_or_outside_a_bot_thread_get_a_private_note(
    discord_world: Discord,
) -> None:
    d = discord_world
    await d.start(access=AccessSettings(deny_users=[f"discord:{d.bob.id}"]))
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("hello")))
    await d.shows(thread, ["Ada L. said: hello"])
    said = d.fake.world.in_channel(thread.id)[-1]
    assert await private(d, d.fake.message_command(said, QUIETEN, d.bob)) == CANNOT
    assert await private(d, d.fake.message_command(said, STOP, d.bob)) == STOP_REFUSED
    assert await private(d, d.fake.message_command(said, RESET, d.bob)) == CANNOT

    plain = d.fake.say(d.channel, d.ada, "no bot here")
    assert await private(d, d.fake.message_command(plain, STATUS, d.ada)) == NOT_OURS
    other = d.fake.world.add_thread(d.channel, "people only", d.ada)
    among = d.fake.say(other, d.ada, "talking among ourselves")
    await d.idle()
    assert await private(d, d.fake.message_command(among, RESET, d.ada)) == NOT_OURS
    assert d.fake.world.shown(other.id) == []
