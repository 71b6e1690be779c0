"""``delegate_task`` through the real ``openai`` client against the fake OpenAI-compatible
server: what the sub-agent's requests carry, what the parent reads back, and the usage."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.api.inbound import Author, Inbound, ThreadKey
from bot.config import Settings
from bot.core import Core
from bot.delegate.tool import SUB_AGENT_PROMPT
from bot.infra.clock import ManualClock
from bot.llm.messages import ToolResult
from bot.llm.openai_model import build_openai_model
from bot.storage.sqlite.store import SqliteStore
from bot.tools import ToolContext, ToolRegistry, tool
from bot.tools.builtin import builtin_tools
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply
from tests.fakes.surface import RecordingSurface, drive

KEY = ThreadKey("test:thread")
ALICE = Author(id="test:U1", display_name="Alice")


@tool
async def lookup(ctx: ToolContext, what: str) -> str:
    """Look something up.

    Args:
        what: What to look up.
    """
    return f"{what}: 42"


class World:
    def __init__(self, tmp_path: Path, base_url: str) -> None:
        self.clock = ManualClock(start=1_000_000.0)
        self.settings = Settings(
            data_dir=tmp_path, openai_base_url=base_url, openai_api_key="sk-test"
        )
        model = build_openai_model(self.settings, self.clock, rng=random.Random(1))
        store = SqliteStore(self.settings.database_path)
        self.core = Core(
            self.settings, store, model, ToolRegistry([*builtin_tools(), lookup]), self.clock
        )
        self.surface = RecordingSurface(self.clock, thread_key=KEY)

    async def say(self, words: str) -> None:
        await drive(
            self.clock, self.core.handle(Inbound(KEY, ALICE, words, "ev1"), self.surface), step=0.5
        )

    async def results(self) -> list[ToolResult]:
        session = await self.core.store.load_session(KEY, self.clock.now())
        return [m for m in session.messages if isinstance(m, ToolResult)]


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


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", [])]


async def test_a_sub_agent_through_the_openai_client(world: World, fake: FakeOpenAI) -> None:
    task = "Look up the answer and report it."
    fake.push(
        Reply(
            calls=[FakeCall("delegate_task", {"task": task, "tools": ["lookup"]}, id="call_0")],
            argument_fragments=5,
        ),
        Reply(
            "On it.", calls=[FakeCall("lookup", {"what": "the answer"}, id="call_0")]
        ),  # the same provider id
        Reply("The answer is 42."),
        Reply("My sub-agent found it: 42."),
    )
    await world.say("What is the answer?")
    parent, first, second, last = (r.body for r in fake.requests)
    assert "delegate_task" in tool_names(parent) and "lookup" in tool_names(parent)
    assert tool_names(first) == ["lookup"] and tool_names(second) == ["lookup"]
    assert first["messages"][0]["role"] == "system" and first["messages"][0]["content"].startswith(
        SUB_AGENT_PROMPT
    )
    assert first["messages"][-1]["content"] == f"[Alice]: {task}"
    assert "the answer: 42" in json.dumps(second["messages"][-1])
    assert (
        "The answer is 42." in json.dumps(last["messages"][-1])
        and last["messages"][-1]["role"] == "tool"
    )
    [result] = await world.results()
    assert (result.name, result.content) == ("delegate_task", "The answer is 42.")
    assert world.surface.texts()[-1].endswith("My sub-agent found it: 42.")
    session = await world.core.store.load_session(KEY, world.clock.now())
    assert session.usage.prompt_tokens == 4 * 50 and session.usage.completion_tokens == 4 * 10


async def test_broken_arguments_for_delegate_task_are_an_error_the_model_reads(
    world: World, fake: FakeOpenAI
) -> None:
    fake.push(
        Reply(calls=[FakeCall("delegate_task", '{"task": "Look it up", "tools": [')]),
        Reply("I will try again."),
    )
    await world.say("Look it up")
    [result] = await world.results()
    assert result.is_error and "invalid arguments for delegate_task" in result.content
    assert len(fake.requests) == 2 and world.surface.texts()[-1].endswith("I will try again.")
