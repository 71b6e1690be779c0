"""The core through the real ``openai`` client against a fake OpenAI-compatible server: what the
thread shows and what the store keeps when the model endpoint misbehaves."""

from __future__ import annotations

import random
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.api.inbound import Author, Inbound, ThreadKey
from bot.config import Settings
from bot.core import Core
from bot.infra.clock import ManualClock
from bot.llm.messages import AssistantMessage, ToolResult, UserMessage
from bot.llm.openai_model import build_openai_model
from bot.sessions.model import RunState
from bot.storage.sqlite.store import SqliteStore
from bot.tools.base import Tool
from bot.tools.builtin import builtin_tools
from bot.tools.registry import ToolRegistry
from tests.fakes.openai_server import CutOff, FakeCall, FakeOpenAI, Fault, Malformed, Reply
from tests.fakes.surface import RecordingSurface, drive

KEY = ThreadKey("test:thread")
ALICE = Author(id="test:U1", display_name="Alice")
SECRET = "sk-test-do-not-leak-0123456789"


class World:
    def __init__(self, tmp_path: Path, base_url: str, tools: tuple[Tool, ...] = ()) -> None:
        self.clock = ManualClock(start=1_000_000.0)
        self.settings = Settings(
            data_dir=tmp_path, openai_base_url=base_url, openai_api_key=SECRET, model_max_retries=3
        )
        model = build_openai_model(self.settings, self.clock, rng=random.Random(1))
        store = SqliteStore(self.settings.database_path)
        self.core = Core(
            self.settings, store, model, ToolRegistry([*builtin_tools(), *tools]), self.clock
        )
        self.surface = RecordingSurface(self.clock, thread_key=KEY)
        self._n = 0

    async def say(self, words: str) -> None:
        self._n += 1
        inbound = Inbound(KEY, ALICE, words, f"ev{self._n}")
        await drive(self.clock, self.core.handle(inbound, self.surface), step=0.5)

    async def session(self) -> Any:
        return await self.core.store.load_session(KEY, self.clock.now())


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


async def test_a_streamed_answer_lands_exactly(world: World, fake: FakeOpenAI) -> None:
    fake.push(Reply("Hello Alice, here is **the** answer.", text_chunk_chars=3))
    await world.say("hi")
    assert world.surface.texts() == ["Hello Alice, here is **the** answer."]
    [request] = fake.requests
    assert (
        request.body["stream"] is True and request.body["messages"][-1]["content"] == "[Alice]: hi"
    )
    session = await world.session()
    assert session.usage.prompt_tokens == 50 and session.state is RunState.IDLE


async def test_a_burst_of_500s_is_retried_then_answered(world: World, fake: FakeOpenAI) -> None:
    fake.push(Fault.server_error(), Fault.server_error(502), Reply("made it"))
    await world.say("hi")
    assert world.surface.texts() == ["made it"] and len(fake.requests) == 3


async def test_500s_beyond_the_retries_give_a_clear_message_and_lose_nothing(
    world: World, fake: FakeOpenAI
) -> None:
    fake.push(*[Fault.server_error()] * 4)
    await world.say("hi")
    assert "model server kept failing" in world.surface.visible_text()
    assert SECRET not in world.surface.visible_text()
    session = await world.session()
    assert [type(m) for m in session.messages] == [UserMessage]
    fake.push(Reply("back"))
    await world.say("again")
    assert world.surface.texts()[-1] == "back"
    assert [m["content"] for m in fake.requests[-1].messages if m["role"] == "user"] == [
        "[Alice]: hi",
        "[Alice]: again",
    ]


async def test_an_unreachable_endpoint_says_so(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once the socket closes
    world = World(tmp_path, f"http://127.0.0.1:{port}/v1")
    await world.core.start()
    try:
        await world.say("hi")
        shown = world.surface.visible_text()
        assert "couldn't reach the model server" in shown and "threadline doctor" in shown
        assert (await world.session()).messages == [
            UserMessage(text="hi", author_id=ALICE.id, author_name="Alice", event_id="ev1")
        ]
    finally:
        await world.core.aclose()


async def test_a_stream_cut_off_after_text_keeps_it_and_is_not_retried(
    world: World, fake: FakeOpenAI
) -> None:
    fake.push(
        CutOff(Reply("This answer will be cut somewhere in the middle", text_chunk_chars=5), 4)
    )
    await world.say("hi")
    assert len(fake.requests) == 1
    shown = world.surface.visible_text()
    assert shown.startswith("This answer wil") and "cut off" in shown and "incomplete" in shown
    session = await world.session()
    assert isinstance(session.messages[-1], AssistantMessage)
    assert shown.startswith(session.messages[-1].text) and len(session.messages[-1].text) >= 10


async def test_a_malformed_stream_gives_a_clear_message(world: World, fake: FakeOpenAI) -> None:
    fake.push(*[Malformed(Reply("never mind"), at_chunk=0)] * 4)
    await world.say("hi")
    assert "sent a stream that was not valid" in world.surface.visible_text()
    assert (await world.session()).state is RunState.IDLE


async def test_invalid_tool_json_and_unknown_tools_reach_the_model_as_errors(
    world: World, fake: FakeOpenAI
) -> None:
    fake.push(
        Reply(calls=[FakeCall("todo_write", '{"todos": [{"content": '), FakeCall("nope", {})]),
        Reply("I fixed my call."),
    )
    await world.say("plan")
    assert world.surface.texts() == ["I fixed my call."]
    results = [m for m in (await world.session()).messages if isinstance(m, ToolResult)]
    assert all(r.is_error for r in results) and len(results) == 2
    sent = [m for m in fake.requests[1].messages if m["role"] == "tool"]
    assert "invalid arguments for todo_write" in sent[0]["content"]
    assert "no tool named 'nope'" in sent[1]["content"]
    ids = [c["id"] for c in fake.requests[1].messages[-3]["tool_calls"]]
    assert [m["tool_call_id"] for m in sent] == ids


async def test_a_rejected_key_is_explained_without_showing_it(
    world: World, fake: FakeOpenAI
) -> None:
    fake.push(Fault.bad_key(SECRET))
    await world.say("hi")
    shown = world.surface.visible_text()
    assert "OPENAI_API_KEY" in shown and SECRET not in shown
