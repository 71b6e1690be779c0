"""A 429's Retry-After holds for every caller of the process's Web API client, in its scope."""

from __future__ import annotations

import asyncio

import pytest

from adapters.slack.api import SlackApi, build_client, http_session
from adapters.slack.pauses import Lanes
from bot.errors import SurfaceRateLimited
from bot.infra.clock import ManualClock
from tests.fakes.slack import BOT_TOKEN, FakeSlack


async def test_a_429_pauses_its_method_in_its_scope_for_every_caller() -> None:
    clock = ManualClock()
    fake = FakeSlack(clock=clock.monotonic)  # its Retry-After runs on the test's clock too
    fake.add_channel("CRANDOM", "random")
    await fake.start()
    session = http_session()
    try:
        api = SlackApi(build_client(BOT_TOKEN, fake.api_url, session), clock)
        root = await api.post("CGENERAL", "", {"text": "root"})
        fake.limits.storm("chat.postMessage", 1, retry_after=30)
        with pytest.raises(SurfaceRateLimited):
            await api.post("CGENERAL", root, {"text": "first"})
        sent = fake.count("chat.postMessage")

        await clock.advance(10)
        with pytest.raises(SurfaceRateLimited) as paused:
            await api.post("CGENERAL", root, {"text": "another stream"})
        assert paused.value.retry_after == pytest.approx(20)
        assert fake.count("chat.postMessage") == sent  # not sent at all
        await api.post("CRANDOM", "", {"text": "another channel"})  # limited per channel
        await api.update("CGENERAL", root, {"text": "edited"})  # another method

        await clock.advance(20)
        await api.post("CGENERAL", root, {"text": "after the pause"})
    finally:
        await session.close()
        await fake.stop()
    assert not fake.limits.violations


async def test_a_429_on_a_workspace_method_pauses_it_in_every_channel() -> None:
    clock = ManualClock()
    fake = FakeSlack(clock=clock.monotonic)  # its Retry-After runs on the test's clock too
    fake.add_channel("CRANDOM", "random")
    await fake.start()
    session = http_session()
    try:
        api = SlackApi(build_client(BOT_TOKEN, fake.api_url, session), clock)
        one = await api.post("CGENERAL", "", {"text": "one"})
        two = await api.post("CRANDOM", "", {"text": "two"})
        fake.limits.storm("chat.update", 1, retry_after=5)
        with pytest.raises(SurfaceRateLimited):
            await api.update("CGENERAL", one, {"text": "one, edited"})
        with pytest.raises(SurfaceRateLimited):
            await api.update("CRANDOM", two, {"text": "two, edited"})
        await clock.advance(5)
        await api.update("CRANDOM", two, {"text": "two, edited"})
    finally:
        await session.close()
        await fake.stop()
    assert fake.count("chat.update") == 2
    assert not fake.limits.violations


async def test_posts_sent_at_once_to_one_channel_wait_for_the_one_before() -> None:
    """Three streams post together; the first gets a 429: the others see it, none crosses it."""
    clock = ManualClock()
    fake = FakeSlack(clock=clock.monotonic)
    fake.add_channel("CRANDOM", "random")
    await fake.start()
    session = http_session()
    try:
        api = SlackApi(build_client(BOT_TOKEN, fake.api_url, session), clock)
        root = await api.post("CGENERAL", "", {"text": "root"})
        fake.limits.storm("chat.postMessage", 1, retry_after=30)
        results = await asyncio.gather(
            *(api.post("CGENERAL", root, {"text": f"stream {n}"}) for n in range(3)),
            api.post("CRANDOM", "", {"text": "another channel"}),
            return_exceptions=True,
        )
    finally:
        await session.close()
        await fake.stop()
    assert all(isinstance(r, SurfaceRateLimited) for r in results[:3])
    assert isinstance(results[3], str)  # another channel's lane is its own (the storm was spent)
    assert fake.limits.rejected["chat.postMessage"] == 1  # the others were never sent
    assert not fake.limits.violations
    assert len(api.lanes) == 0  # nothing kept once the calls are over


async def test_a_call_hanging_past_the_wait_does_not_hold_the_next() -> None:
    lanes = Lanes(wait_s=0.05)
    entered = asyncio.Event()
    release = asyncio.Event()

    async def hanging() -> None:
        async with lanes.turn("chat.update", "C1"):
            entered.set()
            await release.wait()

    first = asyncio.create_task(hanging())
    await asyncio.wait_for(entered.wait(), 5)
    async with asyncio.timeout(5):
        async with lanes.turn("chat.update", "C2"):  # same workspace scope: waits, then goes
            assert not release.is_set()
    release.set()
    await asyncio.wait_for(first, 5)
    assert len(lanes) == 0
