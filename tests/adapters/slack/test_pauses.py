"""A 429's Retry-After holds for every caller of the process's Web API client, in its scope."""

from __future__ import annotations

import pytest

from adapters.slack.api import SlackApi, build_client, http_session
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
