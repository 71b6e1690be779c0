"""Attachments that misbehave, with the real discord.py against the fake Discord's CDN: a file
that declares 100 bytes and streams far more is cut at the cap; a download that sends its
headers and then nothing is stopped with a note in the thread; a slow download holds only its
own thread; and the catch-up after a restart downloads nothing already answered."""

from __future__ import annotations

import asyncio

from tests.adapters.discord.conftest import WITHIN, Discord
from tests.fakes.faulty_body import Fault
from tests.fakes.scripted_model import ScriptedModel, text

MB = 1024 * 1024


async def test_an_attachment_longer_than_it_declares_is_cut_at_the_cap(
    discord_world: Discord,
) -> None:
    d = discord_world
    await d.start(model=ScriptedModel([text("Read the rest.")]), file_max_bytes=1 * MB)
    lying = d.fake.cdn.attachment(
        d.channel.id, "tiny.txt", b"x", "text/plain", size=100, fault=Fault(body_bytes=50 * MB)
    )
    message = d.fake.say(d.channel, d.ada, d.mention("look"), attachments=[lying])
    thread = await d.thread_of(message)
    await d.wait_for(lambda: any("Read the rest." in s for s in d.fake.world.shown(thread.id)))
    await d.idle()
    (shown,) = d.fake.world.shown(thread.id)
    assert "About the files: tiny.txt: not read (larger than the 1.0 MB cap)." in shown
    assert not (d.data_dir / "workspaces").exists() or not any(
        (d.data_dir / "workspaces").rglob("tiny.txt")
    )


async def test_a_download_that_goes_silent_is_stopped_with_a_note(discord_world: Discord) -> None:
    d = discord_world
    await d.start(model=ScriptedModel([text("Answered anyway.")]), file_download_seconds=2)
    silent = d.fake.cdn.attachment(
        d.channel.id, "report.csv", b"a,b\n", "text/csv", fault=Fault(silent=True)
    )
    message = d.fake.say(d.channel, d.ada, d.mention("summarise"), attachments=[silent])
    thread = await d.thread_of(message)
    await d.wait_for(lambda: any("Answered anyway." in s for s in d.fake.world.shown(thread.id)))
    await d.idle()
    (shown,) = d.fake.world.shown(thread.id)
    assert "report.csv: not read (the download did not finish within 2 s and was stopped)" in shown


async def test_a_slow_download_holds_only_its_own_thread(running: Discord) -> None:
    d = running
    fault = Fault(silent=True)
    slow = d.fake.cdn.attachment(d.channel.id, "big.csv", b"a,b\n", "text/csv", fault=fault)
    first = d.fake.say(d.channel, d.ada, d.mention("with a file"), attachments=[slow])
    first_thread = await d.thread_of(first)
    await d.wait_for(lambda: d.fake.cdn.served)  # its download has begun, and hangs
    second = d.fake.say(d.channel, d.bob, d.mention("no file"))
    second_thread = await d.thread_of(second)
    await d.wait_for(lambda: d.fake.world.shown(second_thread.id) == ["Bob said: no file"])
    assert d.fake.world.shown(first_thread.id) == []  # still downloading

    fault.released.set()  # the host gives up: the body ends unfinished
    await d.wait_for(lambda: d.fake.world.shown(first_thread.id))
    await d.idle()
    (shown,) = d.fake.world.shown(first_thread.id)
    assert "About the files: big.csv: not read (the download failed" in shown


async def test_the_catch_up_after_a_restart_downloads_nothing_already_answered(
    running: Discord,
) -> None:
    d = running
    message = d.fake.say(d.channel, d.ada, d.mention("first"), files={"notes.txt": b"hello"})
    thread = await d.thread_of(message)
    await d.wait_for(lambda: d.fake.world.shown(thread.id))
    await d.idle()
    assert len(d.fake.cdn.served) == 1
    await d.stop()
    d.fake.say(thread, d.bob, "and this one", files={"more.txt": b"more"})

    await d.start()
    await d.wait_for(lambda: len(d.fake.world.shown(thread.id)) == 2)
    assert d.adapter is not None
    await asyncio.wait_for(d.adapter.listeners.catch_up.passed(d.guild.id).wait(), WITHIN)
    await d.idle()
    assert len(d.fake.cdn.served) == 2  # the new file only: the answered one was not fetched again
