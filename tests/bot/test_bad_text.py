"""A lone surrogate from the model or from a tool (text that cannot be encoded as UTF-8) is
made U+FFFD where it comes in: the thread shows the answer and the store keeps it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.llm.messages import AssistantMessage, ToolResult
from bot.tools import ToolContext, tool
from tests.bot.test_core_openai import World
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Raw, Reply


@tool
async def odd_output(ctx: ToolContext, why: str) -> str:
    """Reads something whose text is not valid Unicode.

    Args:
        why: Why.
    """
    return f"out \ud800 put ({why})"


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def world(tmp_path: Path, fake: FakeOpenAI) -> AsyncIterator[World]:
    w = World(tmp_path, fake.base_url, tools=(odd_output,))
    await w.core.start()
    yield w
    await w.core.aclose()


def event(delta: dict[str, object], finish: str | None = None) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(chunk)}\n\n".encode()


async def test_a_model_stream_with_a_lone_surrogate_is_answered(
    world: World, fake: FakeOpenAI
) -> None:
    body = event({"content": "bad \ud800"}) + event({"content": " end"}, "stop")
    assert b"\\ud800" in body  # as JSON carries it
    fake.push(Raw(body + b"data: [DONE]\n\n"))
    await world.say("hi")
    assert world.surface.texts() == ["bad \ufffd end"]
    answer = (await world.session()).messages[-1]
    assert isinstance(answer, AssistantMessage) and answer.text == "bad \ufffd end"


async def test_a_tool_call_and_a_tool_output_with_lone_surrogates(
    world: World, fake: FakeOpenAI
) -> None:
    fake.push(Reply(calls=[FakeCall("odd_output", '{"why": "\udc00"}')]), Reply("read it"))
    await world.say("read")
    assert world.surface.texts()[-1] == "read it"
    session = await world.session()
    [call] = [c for m in session.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert call.arguments == '{"why": "\ufffd"}'
    [result] = [m for m in session.messages if isinstance(m, ToolResult)]
    assert result.content == "out \ufffd put (\ufffd)" and not result.is_error
    sent = [m for m in fake.requests[1].messages if m["role"] == "tool"]
    assert "out \ufffd put (\ufffd)" in sent[0]["content"]
