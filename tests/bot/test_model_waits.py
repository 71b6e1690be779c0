"""What the thread says when the model server asks to wait, or sends a stream that is empty or
not valid: the core through the real ``openai`` client against the fake OpenAI server, time on
a manual clock."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.api.inbound import Inbound
from bot.llm.messages import UserMessage
from bot.sessions.model import RunState
from tests.bot.test_core_openai import ALICE, KEY, World
from tests.fakes.openai_server import FakeOpenAI, Fault, Raw, Reply
from tests.fakes.surface import run_until


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def world(tmp_path: Path, fake: FakeOpenAI) -> AsyncIterator[World]:
    w = World(tmp_path, fake.base_url)
    await w.core.start()
    yield w
    await w.core.aclose()


async def test_a_two_minute_retry_after_is_waited_out_and_said(
    world: World, fake: FakeOpenAI
) -> None:
    fake.push(Fault.rate_limited(retry_after="120"), Reply("Here it is."))
    began = world.clock.now()
    await world.say("hi")
    [shown] = world.surface.texts()
    found = re.fullmatch(
        r"_The model server asked to wait 120 s; retrying at (\d\d:\d\d:\d\d) UTC\._\n\nHere it is\.",
        shown,
    )
    assert found is not None, shown
    earliest = f"{datetime.fromtimestamp(began + 120, UTC):%H:%M:%S}"
    assert earliest <= found[1] <= f"{datetime.fromtimestamp(world.clock.now(), UTC):%H:%M:%S}"
    assert len(fake.requests) == 2


async def test_stop_works_while_the_wait_goes_on(world: World, fake: FakeOpenAI) -> None:
    fake.push(Fault.rate_limited(retry_after="150"), Reply("never shown"))
    task = asyncio.ensure_future(world.core.handle(Inbound(KEY, ALICE, "hi", "ev1"), world.surface))
    try:
        await run_until(world.clock, lambda: "asked to wait 150 s" in world.surface.visible_text())
        assert world.clock.sleepers >= 1
        await world.core.stop(KEY, ALICE)
        await run_until(world.clock, task.done, limit=5)
    finally:
        task.cancel()
    assert "Stopped by Alice" in world.surface.visible_text()
    assert len(fake.requests) == 1  # the call was not tried again
    session = await world.session()
    assert session.state is RunState.IDLE
    assert [type(m) for m in session.messages] == [UserMessage]


async def test_a_wait_longer_than_the_bound_ends_the_answer_with_the_servers_figure(
    world: World, fake: FakeOpenAI
) -> None:
    fake.push(Fault.rate_limited(retry_after="600"))
    await world.say("hi")
    assert world.surface.texts() == [
        "⚠️ The model server is rate-limiting requests and asked to wait 10 min. "
        "Please try again then."
    ]
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"data: [DONE]\n\n", "The model server sent nothing (an empty stream)."),
        (
            b"data: Bad Gateway\n\n",
            "The model server sent a stream that was not valid (a chunk was not JSON).",
        ),
    ],
)
async def test_an_empty_or_invalid_stream_is_said_for_what_it_is(
    world: World, fake: FakeOpenAI, body: bytes, said: str
) -> None:
    fake.push(*[Raw(body)] * 4)  # the first call and three retries
    await world.say("hi")
    shown = world.surface.visible_text()
    assert shown.startswith(f"⚠️ {said} Please try again") and "cut off" not in shown
    assert len(fake.requests) == 4
    fake.push(Reply("back"))
    await world.say("again")
    assert world.surface.texts()[-1] == "back"
