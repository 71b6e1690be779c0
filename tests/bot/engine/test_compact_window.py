"""Compaction within the window of the thread's model: the summary is asked of that model, and
what it reads is cut to fit its window (the start and the end of the older part kept)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.engine.compact import LEFT_OUT, fitted
from bot.engine.loop import Engine
from bot.engine.states import EngineConfig
from bot.engine.window import summary_input_chars
from bot.infra.clock import ManualClock
from bot.llm.messages import Summary, UserMessage
from bot.storage.sqlite.store import SqliteStore
from bot.tools import ToolContext, ToolRegistry
from tests.bot.engine.test_compact import ALICE, KEY, history, summary_requests
from tests.fakes.scripted_model import ScriptedModel, text


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    s = SqliteStore(tmp_path / "t.sqlite3")
    await s.open()
    yield s
    await s.close()


def test_a_text_too_long_keeps_its_start_and_end() -> None:
    text_ = "A" * 100 + "B" * 1_000 + "C" * 200
    cut = fitted(text_, 300)
    assert cut == "A" * 100 + LEFT_OUT + "C" * 200
    assert fitted("short", 300) == "short" and fitted(text_, None) == text_


async def test_the_summary_is_asked_of_the_threads_model_within_its_window(
    store: SqliteStore,
) -> None:
    model = ScriptedModel([text("the summary"), text("answered")])
    messages = [*history(60, size=2_000), UserMessage(text="go on")]  # about 60,000 tokens
    clock = ManualClock(start=1_000_000.0)
    config = EngineConfig(system_prompt="be brief", context_window=8_000, model="small-window")
    engine = Engine(model, ToolRegistry([]), store, clock, config)
    session = await store.load_session(KEY, clock.now())
    await store.append_messages(session, messages)

    async def sink(event: object) -> None:
        pass

    result = await engine.run(session, sink, ToolContext(KEY, session, ALICE, clock))
    stored = await store.load_session(KEY, clock.now())
    assert result.ok and isinstance(stored.messages[0], Summary)
    [summary] = summary_requests(model)
    read = summary.messages[0].text
    assert summary.model == "small-window"
    assert len(read) <= summary_input_chars(8_000) + len(LEFT_OUT)
    assert read.startswith("Alice: question 0 ") and LEFT_OUT in read
    assert read.endswith("answer 56")  # the older part ends where the kept turns begin
