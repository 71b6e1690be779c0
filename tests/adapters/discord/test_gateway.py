"""The gateway: resumes and redeliveries answered once, invalid sessions, heartbeats, the
Message Content intent refused, bad tokens, malformed events, and no token in the logs."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from pydantic import SecretStr

from adapters.discord.adapter import MESSAGE_CONTENT_OFF, DiscordAdapter
from bot.core import Core
from bot.errors import ConfigError
from tests.adapters.discord.conftest import Discord, discord_settings, make_settings
from tests.fakes.discord import FakeDiscord, FastClock


async def test_a_message_redelivered_after_a_resume_is_answered_once(running: Discord) -> None:
    d = running
    asked = d.fake.say(d.channel, d.ada, d.mention("once"))
    thread = await d.thread_of(asked)
    await d.shows(thread, ["Ada L. said: once"])
    d.fake.say(thread, d.ada, "twice?")
    await d.shows(thread, ["Ada L. said: once", "Ada L. said: twice?"])

    d.fake.gateway.redeliver_on_resume = 8  # the mention and the follow-up come again
    await d.fake.gateway.drop()
    await d.wait_for(
        lambda: any(c.path == "/resume" and c.session for c in d.fake.gateway.connections)
    )
    d.fake.say(thread, d.bob, "after the resume")

    await d.shows(
        thread, ["Ada L. said: once", "Ada L. said: twice?", "Bob said: after the resume"]
    )
    assert len([c for c in d.fake.world.channels.values() if c.parent_id == d.channel.id]) == 1
    assert len(d.fake.gateway.sessions) == 1  # resumed, not identified anew


async def test_messages_sent_while_disconnected_are_replayed_and_answered(running: Discord) -> None:
    d = running
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("hello")))
    await d.shows(thread, ["Ada L. said: hello"])

    await d.fake.gateway.drop()
    d.fake.say(thread, d.ada, "sent during the outage")
    await d.shows(thread, ["Ada L. said: hello", "Ada L. said: sent during the outage"])


async def test_an_invalid_session_identifies_again(running: Discord) -> None:
    d = running
    await d.fake.gateway.invalidate()
    # discord.py waits 5 s (of real time) before identifying again: Discord's identify limit
    await d.wait_for(
        lambda: len(d.fake.gateway.sessions) == 2 and d.fake.gateway.live_sessions(), within=10
    )
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("still there?")))
    await d.shows(thread, ["Ada L. said: still there?"])


async def test_heartbeats_are_acknowledged_and_the_connection_stays(discord_world: Discord) -> None:
    d = discord_world
    d.fake.gateway.heartbeat_interval_ms = 50
    await d.start()
    await d.wait_for(lambda: d.fake.gateway.connections[-1].heartbeats >= 4)
    assert len(d.fake.gateway.connections) == 1


async def test_without_the_message_content_intent_it_says_so_and_mentions_still_work(
    clock: FastClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.chdir(tmp_path)
    fake = FakeDiscord(clock, app_flags=0)  # the intent is off in the developer portal
    await fake.start()
    guild = fake.world.add_guild()
    channel = fake.world.add_channel(guild)
    ada = fake.world.add_user("Ada", guild=guild)
    d = Discord(
        fake,
        clock,
        tmp_path,
        guild,
        channel,
        ada,
        ada,
        None,
        make_settings(tmp_path / "data"),
        discord_settings(fake),
    )
    from tests.adapters.discord.conftest import echo
    from tests.fakes.scripted_model import ScriptedModel

    d.model = ScriptedModel([], respond=echo)
    try:
        with caplog.at_level(logging.ERROR, logger="adapters.discord"):
            await d.start()
            thread = await d.thread_of(fake.say(channel, ada, d.mention("can you read this?")))
            await d.shows(thread, ["Ada said: can you read this?"])
        assert MESSAGE_CONTENT_OFF in caplog.text
        assert "Bot → Privileged Gateway Intents → Message Content Intent" in MESSAGE_CONTENT_OFF
        assert [c.close_code for c in fake.gateway.connections][0] == 4014

        fake.say(thread, ada, "without a mention: unreadable now")
        fake.say(thread, ada, d.mention("with one"))
        await d.shows(thread, ["Ada said: can you read this?", "Ada said: with one"])
        dm = fake.world.open_dm(ada)
        fake.say(dm, ada, "a private word")
        await d.shows(dm, ["Ada said: a private word"])
    finally:
        await d.stop()
        await fake.close()


async def test_a_refused_token_is_a_configuration_error_in_plain_words(
    discord_world: Discord,
) -> None:
    d = discord_world
    wrong = "MTIz.wrong.token-that-discord-refuses"
    refused = d.discord.model_copy(update={"discord_token": SecretStr(wrong)})
    core = Core.create(d.settings, clock=d.clock, model=d.model)
    await core.start()
    adapter = DiscordAdapter(core, d.settings, refused)
    try:
        with pytest.raises(ConfigError) as caught:
            await adapter.start()
    finally:
        await adapter.stop()
        await core.aclose()
    assert caught.value.setting == "DISCORD_TOKEN"
    assert "Reset Token" in caught.value.problem and wrong not in str(caught.value)


@pytest.mark.parametrize("token", ["", "two words", "Bot abc.def.ghi"])
def test_malformed_tokens_are_refused_before_connecting(discord_world: Discord, token: str) -> None:
    malformed = discord_world.discord.model_copy(update={"discord_token": SecretStr(token)})
    core = Core.create(discord_world.settings, model=discord_world.model)
    with pytest.raises(ConfigError):
        DiscordAdapter(core, discord_world.settings, malformed)


async def test_malformed_and_foreign_events_change_nothing(running: Discord) -> None:
    d = running
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("hi")))
    await d.shows(thread, ["Ada L. said: hi"])
    reply = d.fake.world.in_channel(thread.id)[-1]

    foreign = d.fake.click(reply, "someone-elses-button", d.ada)
    gone = d.fake.click(reply, "tl:approve:does-not-exist", d.ada)  # not on this message
    d.fake.gateway.dispatch("MESSAGE_CREATE", {"id": "1", "channel_id": str(thread.id)})
    d.fake.gateway.dispatch("NOT_AN_EVENT", {"what": "ever"})
    d.fake.say(thread, d.ada, "still answering")
    await d.shows(thread, ["Ada L. said: hi", "Ada L. said: still answering"])
    assert foreign.callbacks == [] and gone.callbacks == []
    assert len(d.fake.gateway.connections) == 1  # the unreadable message was skipped


async def test_the_token_never_reaches_the_logs(
    running: Discord, caplog: pytest.LogCaptureFixture
) -> None:
    d = running
    with caplog.at_level(logging.DEBUG):
        thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("log everything")))
        await d.shows(thread, ["Ada L. said: log everything"])
        status = d.fake.slash(thread, d.ada, "threadline", "status")
        await d.wait_for(lambda: status.followups)
        await d.fake.gateway.drop()
        d.fake.say(thread, d.ada, "after a resume")
        await d.shows(thread, ["Ada L. said: log everything", "Ada L. said: after a resume"])
        await d.start()  # a restart logs in again
    assert len(caplog.records) > 20
    assert d.fake.token not in caplog.text
    assert all(d.fake.token not in r.getMessage() for r in caplog.records)
