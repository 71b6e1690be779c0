"""Streams as real servers send them (``tests/fakes/streams/``), replayed byte for byte by the
fake OpenAI server through the real ``openai`` client into the engine: each reads as the same
engine events — a tool call and its answer, or a text answer — whatever the server's quirks.
The ``*-written.sse`` streams hold a call written as text, read with ``text_tool_calls`` on; the
same tool calls as text, with it off, are shown as the text they are."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.api.inbound import Author, ThreadKey
from bot.engine.events import (
    EngineEvent,
    Finished,
    ModelCallStarted,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from bot.engine.loop import Engine
from bot.engine.states import EngineConfig
from bot.infra.clock import SystemClock
from bot.llm.messages import ToolResult, Usage, UserMessage
from bot.llm.openai_model import OpenAIModel
from bot.llm.retry import Backoff
from bot.storage.sqlite.store import SqliteStore
from bot.tools import ToolContext, ToolRegistry, tool
from tests.fakes.openai_server import FakeOpenAI, Raw, Reply

STREAMS = Path(__file__).parents[2] / "fakes" / "streams"
KEY = ThreadKey("test:streams")
ANSWER = "High water at Brest is at 06:12."
ARGUMENTS = '{"port": "Brest"}'


@tool
async def tide(ctx: ToolContext, port: str) -> str:
    """The time of the next high water.

    Args:
        port: Where.
    """
    return f"{port}: 06:12"


def shape(events: list[EngineEvent]) -> list[tuple[object, ...]]:
    """The events as a person would tell them: text joined, call ids left out."""
    out: list[tuple[object, ...]] = []
    for event in events:
        match event:
            case TextDelta(text) if out and out[-1][0] == "text":
                out[-1] = ("text", f"{out[-1][1]}{text}")
            case TextDelta(text):
                out.append(("text", text))
            case ModelCallStarted(round):
                out.append(("model", round))
            case ToolStarted(_, name, arguments):
                out.append(("tool", name, arguments))
            case ToolFinished(_, name, is_error):
                out.append(("done", name, is_error))
            case Finished(usage):
                out.append(("finished", usage))
            case _:
                out.append((type(event).__name__,))
    return out


CALLED = [
    ("model", 1),
    ("tool", "tide", ARGUMENTS),
    ("done", "tide", False),
    ("model", 2),
    ("text", ANSWER),
    ("finished", Usage(prompt_tokens=21 + 50, completion_tokens=9 + 10)),
]
ANSWERED = [
    ("model", 1),
    ("text", ANSWER),
    ("finished", Usage(prompt_tokens=21, completion_tokens=9)),
]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    s = SqliteStore(tmp_path / "t.sqlite3")
    await s.open()
    yield s
    await s.close()


async def answer(
    store: SqliteStore, stream: bytes, *, text_tool_calls: bool
) -> tuple[list[EngineEvent], FakeOpenAI]:
    clock = SystemClock()
    async with FakeOpenAI() as fake:
        fake.push(Raw(stream), Reply(ANSWER))
        model = OpenAIModel(
            "local",
            api_key="none",
            base_url=fake.base_url,
            clock=clock,
            backoff=Backoff(max_retries=0, rng=random.Random(1)),
        )
        config = EngineConfig(system_prompt="be brief", text_tool_calls=text_tool_calls)
        engine = Engine(model, ToolRegistry([tide]), store, clock, config)
        session = await store.load_session(KEY, clock.now())
        await store.append_messages(session, [UserMessage(text="High water?", author_id="U1")])
        events: list[EngineEvent] = []

        async def sink(event: EngineEvent) -> None:
            events.append(event)

        try:
            await engine.run(session, sink, ToolContext(KEY, session, Author("U1", "A"), clock))
        finally:
            await model.aclose()
    return events, fake


def streams(*patterns: str) -> list[object]:
    """Each stream's bytes, named by its file."""
    found = [p for pattern in patterns for p in sorted(STREAMS.glob(pattern))]
    assert found, patterns
    return [pytest.param(p.read_bytes(), id=p.stem) for p in found]


@pytest.mark.parametrize("stream", streams("*-text.sse"))
async def test_a_text_answer_reads_the_same_from_every_server(
    store: SqliteStore, stream: bytes
) -> None:
    events, _ = await answer(store, stream, text_tool_calls=False)
    assert shape(events) == ANSWERED


@pytest.mark.parametrize("stream", streams("*-call.sse", "*-written.sse"))
async def test_a_tool_call_reads_the_same_from_every_server(
    store: SqliteStore, stream: bytes
) -> None:
    events, fake = await answer(store, stream, text_tool_calls=True)
    assert shape(events) == CALLED
    sent = fake.requests[1].messages
    [asked] = [m for m in sent if m["role"] == "assistant"]
    assert [c["function"] for c in asked["tool_calls"]] == [
        {"name": "tide", "arguments": ARGUMENTS}
    ]
    assert not asked["content"]  # the call's text is not kept as words
    assert sent[-1]["role"] == "tool" and "Brest: 06:12" in sent[-1]["content"]


@pytest.mark.parametrize("stream", streams("*-written.sse"))
async def test_with_the_setting_off_a_call_written_as_text_stays_text(
    store: SqliteStore, stream: bytes
) -> None:
    events, fake = await answer(store, stream, text_tool_calls=False)
    [(_, text)] = [e for e in shape(events) if e[0] == "text"]
    assert "tide" in str(text) and "Brest" in str(text)
    assert len(fake.requests) == 1


async def test_the_text_before_a_written_call_is_shown_and_its_error_goes_to_the_model(
    store: SqliteStore,
) -> None:
    written = (
        "Let me check.<tool_call>"
        '{"name": "tide", "arguments": {"port": "Brest",,}}</tool_call>'
        '<tool_call>{"name": "moon", "arguments": {}}</tool_call>'
    )
    chunk = {"choices": [{"index": 0, "delta": {"content": written}, "finish_reason": "stop"}]}
    stream = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
    events, fake = await answer(store, stream, text_tool_calls=True)
    assert shape(events)[:4] == [
        ("model", 1),
        ("text", "Let me check."),
        ("done", "tide", True),
        ("done", "moon", True),
    ]
    results = [m for m in fake.requests[1].messages if m["role"] == "tool"]
    assert "could not be read" in results[0]["content"] and "Brest" in results[0]["content"]
    assert "no tool named 'moon'" in results[1]["content"]
    stored = await store.load_session(KEY, SystemClock().now())
    assert [m.is_error for m in stored.messages if isinstance(m, ToolResult)] == [True, True]
