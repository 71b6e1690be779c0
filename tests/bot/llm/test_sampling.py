"""What the real ``openai`` client sends for a request's sampling and output limit, and what
comes back of a reasoning model's reasoning (that it reasons, never what), against the fake
OpenAI server."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import pytest

from bot.infra.clock import ManualClock
from bot.llm.messages import UserMessage
from bot.llm.model import ModelRequest, Sampling, TextPiece, ThinkingPiece
from bot.llm.openai_model import OpenAIModel
from bot.llm.retry import Backoff
from tests.fakes.openai_server import FakeOpenAI, Reply

REASONING = "The user greets me; SECRET-PLAN-42 says to answer briefly."


def request(**fields: object) -> ModelRequest:
    return ModelRequest(
        system="You are Threadline.",
        messages=[UserMessage(text="hello")],
        tools=(),
        **fields,  # type: ignore[arg-type]
    )


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def model(fake: FakeOpenAI) -> AsyncIterator[OpenAIModel]:
    made = OpenAIModel(
        "qwen3",
        api_key="sk-test",
        base_url=fake.base_url,
        clock=ManualClock(),
        backoff=Backoff(max_retries=0, rng=random.Random(1)),
    )
    yield made
    await made.aclose()


async def test_sampling_and_the_output_limit_are_sent_as_set(
    fake: FakeOpenAI, model: OpenAIModel
) -> None:
    fake.push(Reply("ok"))
    sampling = Sampling(temperature=0.2, top_p=0.9, seed=7, reasoning_effort="high")
    _ = [p async for p in model.stream(request(max_tokens=900, sampling=sampling))]
    [sent] = fake.requests
    assert sent.params == {
        "temperature": 0.2,
        "top_p": 0.9,
        "seed": 7,
        "reasoning_effort": "high",
        "max_tokens": 900,
    }


async def test_nothing_unset_is_sent(fake: FakeOpenAI, model: OpenAIModel) -> None:
    fake.push(Reply("ok"), Reply("ok"))
    _ = [p async for p in model.stream(request())]
    _ = [p async for p in model.stream(request(sampling=Sampling(temperature=0.0)))]
    assert [r.params for r in fake.requests] == [{}, {"temperature": 0.0}]


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_reasoning_arrives_as_its_size_only(
    fake: FakeOpenAI, model: OpenAIModel, field: str
) -> None:
    fake.push(Reply("Hello!", reasoning=REASONING, reasoning_field=field))
    pieces = [p async for p in model.stream(request())]
    reasoned = [p for p in pieces if isinstance(p, ThinkingPiece)]
    assert sum(p.chars for p in reasoned) == len(REASONING)
    assert pieces.index(reasoned[-1]) < next(
        i for i, p in enumerate(pieces) if isinstance(p, TextPiece)
    )
    assert "".join(p.text for p in pieces if isinstance(p, TextPiece)) == "Hello!"
    assert "SECRET-PLAN" not in repr(pieces)
