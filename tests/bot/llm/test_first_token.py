"""The first-token timeout: the real ``openai`` client against a fake server that hangs before
its first byte or its first token gives up when the clock says so, with words for the thread;
an answer that has begun is never cut by it."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Literal

import pytest

from bot.engine.messages import failure_text
from bot.errors import ModelSilent
from bot.infra.clock import ManualClock
from bot.llm.first_token import FirstTokenLimit
from bot.llm.messages import UserMessage
from bot.llm.model import ModelPiece, ModelRequest, TextPiece
from bot.llm.openai_model import OpenAIModel
from bot.llm.retry import Backoff
from tests.fakes.openai_server import Delay, FakeOpenAI, Fault, Hang, Reply

REQUEST = ModelRequest(system="You are Threadline.", messages=[UserMessage(text="hi")], tools=())
LIMIT = 60.0


async def read(model: FirstTokenLimit) -> list[ModelPiece]:
    async with aclosing(model.stream(REQUEST)) as pieces:
        return [piece async for piece in pieces]


async def until_asleep(clock: ManualClock, count: int) -> None:
    """Wait (a bounded number of loop turns) until ``count`` sleepers wait on the clock."""
    for _ in range(10_000):
        if clock.sleepers >= count:
            return
        await asyncio.sleep(0.001)
    raise AssertionError(f"never {count} sleepers on the clock")


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


def limited(fake: FakeOpenAI, clock: ManualClock, retries: int = 0) -> FirstTokenLimit:
    model = OpenAIModel(
        "gpt-4o-mini",
        api_key="sk-test",
        base_url=fake.base_url,
        clock=clock,
        backoff=Backoff(max_retries=retries, rng=random.Random(1)),
    )
    return FirstTokenLimit(model, clock, LIMIT)


@pytest.mark.parametrize("before", ["byte", "token"])
async def test_a_server_that_sends_nothing_is_given_up_on_at_the_limit(
    fake: FakeOpenAI, before: Literal["byte", "token"]
) -> None:
    clock = ManualClock()
    released = asyncio.Event()
    fake.push(Hang(released, before))
    model = limited(fake, clock)
    try:
        reading = asyncio.ensure_future(read(model))
        await fake.wait_for_requests(1)
        await until_asleep(clock, 1)
        await clock.advance(LIMIT - 1)
        assert not reading.done(), "not before the limit"
        await clock.advance(1)
        with pytest.raises(ModelSilent) as caught:
            await asyncio.wait_for(reading, 10)
    finally:
        released.set()
        await model.aclose()
    note = failure_text(caught.value, partial=False)
    assert note.startswith("The model server sent nothing for 60 s;")
    assert "THREADLINE_MODEL_FIRST_TOKEN_TIMEOUT_S" in note


async def test_retries_count_toward_the_limit(fake: FakeOpenAI) -> None:
    clock = ManualClock()
    released = asyncio.Event()
    fake.push(Fault.server_error(), Hang(released))
    model = limited(fake, clock, retries=3)
    try:
        reading = asyncio.ensure_future(read(model))
        await fake.wait_for_requests(1)
        await until_asleep(clock, 2)  # the limit, and the backoff before the retry
        await clock.advance(1)
        await fake.wait_for_requests(2)
        await clock.advance(LIMIT)
        with pytest.raises(ModelSilent):
            await asyncio.wait_for(reading, 10)
    finally:
        released.set()
        await model.aclose()
    assert len(fake.requests) == 2


async def test_an_answer_that_began_in_time_is_never_cut(fake: FakeOpenAI) -> None:
    clock = ManualClock()
    go_on = asyncio.Event()
    fake.push(Delay(Reply("All of it."), until=go_on))
    model = limited(fake, clock)
    try:
        reading = asyncio.ensure_future(read(model))
        await fake.wait_for_requests(1)
        await until_asleep(clock, 1)
        await clock.advance(LIMIT - 1)
        go_on.set()
        pieces = await asyncio.wait_for(reading, 10)
        assert clock.sleepers == 0, "no timer left behind"
        await clock.advance(LIMIT * 2)
    finally:
        await model.aclose()
    assert "".join(p.text for p in pieces if isinstance(p, TextPiece)) == "All of it."
