"""A reasoning model's reasoning, through the core and the real ``openai`` client against the
fake OpenAI server: the thread says the bot is thinking (the status line before any text, a
line under the reply after), and the reasoning itself reaches nothing people read: not the
thread, not the stored session, not the log."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.api.inbound import Inbound
from bot.llm.messages import AssistantMessage
from tests.bot.test_core_openai import ALICE, KEY, World
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply
from tests.fakes.surface import run_until

REASONING = "Hidden chain: SECRET-PLAN-42, the user must not read this."
MARK = "SECRET-PLAN"


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


def stored_bytes(data_dir: Path) -> bytes:
    """The SQLite database and its journal, byte for byte."""
    return b"".join(f.read_bytes() for f in data_dir.glob("threadline.sqlite3*"))


def shown(world: World) -> list[str]:
    """Every text the thread was ever shown: posts, edits and status lines."""
    return [c.text for c in world.surface.calls if c.text]


async def test_the_thread_shows_thinking_then_the_answer_never_the_reasoning(
    world: World, fake: FakeOpenAI, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake.push(Reply("It is 4.", reasoning=REASONING, reasoning_field="reasoning"))
    await world.say("what is 2+2?")
    assert world.surface.texts() == ["It is 4."]
    assert "thinking…" in world.surface.status_history
    assert not any(MARK in text for text in shown(world))
    session = await world.session()
    assert [m.text for m in session.messages if isinstance(m, AssistantMessage)] == ["It is 4."]
    assert MARK not in caplog.text
    assert MARK.encode() not in stored_bytes(tmp_path)


async def test_thinking_after_some_text_is_a_line_under_the_reply(
    world: World, fake: FakeOpenAI
) -> None:
    thinking = asyncio.Event()
    fake.push(
        Reply("Let me look.", calls=[FakeCall("no_such_tool", {})]),
        Reply("Found it.", reasoning=REASONING, hold_after_reasoning=thinking),
    )
    inbound = Inbound(KEY, ALICE, "where is it?", "ev-reasoning")
    said = asyncio.ensure_future(world.core.handle(inbound, world.surface))
    await run_until(world.clock, lambda: any("_thinking…_" in t for t in shown(world)))
    thinking.set()
    await run_until(world.clock, said.done)
    await said
    [reply] = world.surface.texts()
    assert reply.startswith("Let me look.") and reply.endswith("Found it.")
    assert "thinking" not in reply and not any(MARK in text for text in shown(world))
    second = fake.requests[1].messages
    assert not any(MARK in str(m.get("content")) for m in second)
