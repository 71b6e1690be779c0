"""Compaction and per-thread limits, through the engine with a scripted model and real SQLite."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.api.inbound import Author, ThreadKey
from bot.engine.compact import SUMMARY_PROMPT, cut_point
from bot.engine.events import EngineEvent, Failed
from bot.engine.loop import Engine
from bot.engine.states import EngineConfig, RunResult
from bot.errors import ContextOverflow, ModelServerError
from bot.infra.clock import ManualClock
from bot.llm.messages import (
    AssistantMessage,
    Message,
    Summary,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from bot.storage.sqlite.store import SqliteStore
from bot.tools import ToolContext, ToolRegistry
from bot.tools.builtin import builtin_tools
from tests.fakes.scripted_model import ScriptedModel, call, step, text

KEY = ThreadKey("test:long")
ALICE = Author(id="test:U1", display_name="Alice")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    s = SqliteStore(tmp_path / "t.sqlite3")
    await s.open()
    yield s
    await s.close()


def history(turns: int, size: int = 400) -> list[Message]:
    """``turns`` exchanges, each with a tool call and its result in the middle."""
    out: list[Message] = []
    for i in range(turns):
        tc = ToolCall(id=f"c{i}", wire_id=f"w{i}", name="todo_write", arguments="{}")
        out += [
            UserMessage(text=f"question {i} " + "x" * size, author_name="Alice"),
            AssistantMessage(text="", tool_calls=(tc,)),
            ToolResult(call_id=f"c{i}", name="todo_write", content="ok " + "y" * size),
            AssistantMessage(text=f"answer {i}"),
        ]
    return out


async def run(
    store: SqliteStore, model: ScriptedModel, messages: list[Message], **config: Any
) -> tuple[RunResult, list[EngineEvent], Any]:
    clock = config.pop("clock", None) or ManualClock(start=1_000_000.0)
    engine = Engine(
        model,
        ToolRegistry(builtin_tools()),
        store,
        clock,
        EngineConfig(system_prompt="be brief", **config),
    )
    session = await store.load_session(KEY, clock.now())
    if messages:
        await store.append_messages(session, messages)
    events: list[EngineEvent] = []

    async def sink(event: EngineEvent) -> None:
        events.append(event)

    result = await engine.run(session, sink, ToolContext(KEY, session, ALICE, clock))
    return result, events, await store.load_session(KEY, clock.now())


def summary_requests(model: ScriptedModel) -> list[Any]:
    return [r for r in model.requests if r.system == SUMMARY_PROMPT]


def test_the_cut_is_always_before_a_user_message() -> None:
    messages = history(6)
    cut = cut_point(messages, 2)
    assert isinstance(messages[cut], UserMessage) and cut == 16
    assert cut_point(messages, 6) == 0


async def test_a_long_thread_is_compacted_before_the_next_call(store: SqliteStore) -> None:
    model = ScriptedModel([text("- Alice asked many questions"), text("fresh answer")])
    messages = [*history(20), UserMessage(text="and now?", author_name="Alice")]
    result, _, session = await run(store, model, messages, context_window=2000, keep_recent_turns=2)
    assert result.ok
    [summarise] = summary_requests(model)
    assert "question 0" in summarise.messages[0].text and summarise.tools == []
    first = session.messages[0]
    assert isinstance(first, Summary) and first.text == "- Alice asked many questions"
    assert first.replaced == 19 * 4
    kept = session.messages[1:]
    assert isinstance(kept[0], UserMessage) and kept[0].text.startswith("question 19")
    assert [m.text for m in kept if isinstance(m, UserMessage)][-1] == "and now?"
    assert kept[-1] == AssistantMessage(text="fresh answer")
    # every call still has its result, in the transcript the model got
    sent = model.requests[-1].messages
    calls = {c.id for m in sent if isinstance(m, AssistantMessage) for c in m.tool_calls}
    assert calls == {m.call_id for m in sent if isinstance(m, ToolResult)}
    assert len(sent) < len(messages)


async def test_a_short_thread_is_not_compacted(store: SqliteStore) -> None:
    model = ScriptedModel([text("hi")])
    await run(store, model, [*history(2), UserMessage(text="hey")], context_window=128_000)
    assert summary_requests(model) == []


async def test_context_overflow_compacts_and_retries_once(store: SqliteStore) -> None:
    model = ScriptedModel(
        [ContextOverflow("too long", status=400), text("summary"), text("made it")]
    )
    result, _, session = await run(store, model, [*history(8), UserMessage(text="go")])
    assert result.ok and isinstance(session.messages[0], Summary)
    assert session.messages[-1] == AssistantMessage(text="made it")


async def test_overflow_again_after_compaction_says_so(store: SqliteStore) -> None:
    model = ScriptedModel([ContextOverflow("too long"), text("summary"), ContextOverflow("still")])
    result, events, _ = await run(store, model, [*history(8), UserMessage(text="go")])
    assert not result.ok
    assert isinstance(events[-1], Failed) and "longer than the model can read" in events[-1].message


async def test_a_failing_summary_leaves_the_transcript_intact(store: SqliteStore) -> None:
    model = ScriptedModel([ContextOverflow("too long"), ModelServerError("boom", status=500)])
    messages = [*history(8), UserMessage(text="go")]
    result, events, session = await run(store, model, messages)
    assert not result.ok and isinstance(events[-1], Failed)
    assert session.messages == messages


async def test_the_run_token_limit_ends_the_run_with_a_clear_message(store: SqliteStore) -> None:
    todo = {"todos": [{"content": "a"}]}
    model = ScriptedModel(
        [step(call("todo_write", todo)), step(call("todo_write", todo)), text("x")]
    )
    result, events, _ = await run(store, model, [UserMessage(text="go")], run_max_tokens=15)
    assert not result.ok and len(model.requests) == 1
    assert isinstance(events[-1], Failed) and "token limit (15 tokens)" in events[-1].message


async def test_the_daily_limit_holds_until_the_next_utc_day(store: SqliteStore) -> None:
    clock = ManualClock(start=1_700_000_000.0)
    model = ScriptedModel(
        [text("one", usage=Usage(prompt_tokens=50, completion_tokens=10)), text("two")]
    )
    result, _, _ = await run(store, model, [UserMessage(text="a")], clock=clock, day_max_tokens=40)
    assert result.ok
    result, events, _ = await run(
        store, model, [UserMessage(text="b")], clock=clock, day_max_tokens=40
    )
    assert not result.ok and "tokens for today" in events[-1].message  # type: ignore[union-attr]
    await clock.advance(86_400)
    result, _, session = await run(
        store, model, [UserMessage(text="c")], clock=clock, day_max_tokens=40
    )
    assert result.ok and session.day_tokens > 0
