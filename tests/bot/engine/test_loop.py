"""The agent loop against a scripted model and the real SQLite store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bot.api.inbound import Author, ThreadKey
from bot.engine.events import (
    EngineEvent,
    Failed,
    Finished,
    TextDelta,
    TodosChanged,
    ToolFinished,
)
from bot.engine.loop import EMPTY_WORDS, Engine
from bot.engine.prompt import open_calls
from bot.engine.states import EngineConfig
from bot.engine.tool_round import STOPPED_RESULT
from bot.errors import ModelServerError, ModelStreamBroken
from bot.infra.clock import ManualClock
from bot.llm.messages import AssistantMessage, SystemMessage, ToolResult, Usage, UserMessage
from bot.llm.model import FinishPiece
from bot.sessions.model import Session, Todo
from bot.storage.sqlite.store import SqliteStore
from bot.tools import Tool, ToolContext, ToolRegistry, tool
from bot.tools.builtin import builtin_tools
from tests.fakes.scripted_model import ScriptedModel, Step, call, step, text

KEY = ThreadKey("test:t1")
ALICE = Author(id="test:U1", display_name="Alice")


@tool
async def explode(ctx: ToolContext, reason: str) -> str:
    """Always fails.

    Args:
        reason: Why.
    """
    raise RuntimeError(f"boom: {reason}")


class Harness:
    def __init__(
        self,
        store: SqliteStore,
        model: ScriptedModel,
        tools: tuple[Tool, ...] = (),
        **config: object,
    ) -> None:
        self.store = store
        self.model = model
        self.clock = ManualClock()
        registry = ToolRegistry([*builtin_tools(), explode, *tools])
        self.engine = Engine(
            model,
            registry,
            store,
            self.clock,
            EngineConfig(system_prompt="be brief", **config),  # type: ignore[arg-type]
        )
        self.events: list[EngineEvent] = []

    async def sink(self, event: EngineEvent) -> None:
        self.events.append(event)

    async def ask(self, words: str) -> Session:
        session = await self.store.load_session(KEY, self.clock.now())
        await self.store.append_messages(session, [UserMessage(text=words, author_name="Alice")])
        result = await self.engine.run(
            session, self.sink, ToolContext(KEY, session, ALICE, self.clock)
        )
        assert result.rounds >= 1
        return session

    async def stored(self) -> Session:
        return await self.store.load_session(KEY, self.clock.now())


@pytest.fixture
async def store(tmp_path: Path):
    s = SqliteStore(tmp_path / "t.sqlite3")
    await s.open()
    yield s
    await s.close()


def harness(store: SqliteStore, steps: list[Step], **config: object) -> Harness:
    return Harness(store, ScriptedModel(steps), **config)


async def test_text_answer_is_streamed_and_stored(store: SqliteStore) -> None:
    h = harness(store, [text("Hel", "lo ", "Alice")])
    await h.ask("hi")
    assert "".join(e.text for e in h.events if isinstance(e, TextDelta)) == "Hello Alice"
    assert isinstance(h.events[-1], Finished)
    saved = await h.stored()
    assert [type(m) for m in saved.messages] == [UserMessage, AssistantMessage]
    assert saved.messages[-1].text == "Hello Alice"  # type: ignore[union-attr]


async def test_todo_write_updates_the_list_and_the_model_sees_it(store: SqliteStore) -> None:
    todos = [
        {"content": "look", "status": "in_progress"},
        {"content": "answer", "status": "pending"},
    ]
    h = harness(store, [step(call("todo_write", {"todos": todos})), text("done")])
    await h.ask("plan it")
    changed = [e for e in h.events if isinstance(e, TodosChanged)]
    assert changed and [t.content for t in changed[-1].todos] == ["look", "answer"]
    saved = await h.stored()
    assert saved.todos == (Todo(content="look", status="in_progress"), Todo(content="answer"))
    second = h.model.requests[1].messages
    assert isinstance(second[-1], SystemMessage) and "[in_progress] look" in second[-1].text
    result = next(m for m in saved.messages if isinstance(m, ToolResult))
    assert not result.is_error


async def test_invalid_arguments_unknown_tool_and_a_crashing_tool_become_results(
    store: SqliteStore,
) -> None:
    h = harness(
        store,
        [
            step(
                call("todo_write", '{"todos": [{"content": "x", "status": "bogus"}', index=0),
                call("no_such_tool", {}, index=1),
                call("explode", {"reason": "test"}, index=2),
            ),
            text("sorry"),
        ],
    )
    await h.ask("go")
    saved = await h.stored()
    results = [m for m in saved.messages if isinstance(m, ToolResult)]
    assert len(results) == 3 and all(r.is_error for r in results)
    assert "invalid arguments for todo_write" in results[0].content
    assert "no tool named 'no_such_tool'" in results[1].content
    assert "boom: test" in results[2].content
    assert [e.is_error for e in h.events if isinstance(e, ToolFinished)] == [True, True, True]
    # the model saw every error before answering
    assert sum(isinstance(m, ToolResult) for m in h.model.requests[1].messages) == 3
    assert saved.messages[-1].text == "sorry"  # type: ignore[union-attr]


async def test_repeated_provider_ids_get_unique_ids(store: SqliteStore) -> None:
    todo = {"todos": [{"content": "a", "status": "pending"}]}
    h = harness(
        store,
        [
            step(call("todo_write", todo, index=0, provider_id="call_0")),
            step(call("todo_write", todo, index=0, provider_id="call_0")),
            text("ok"),
        ],
    )
    await h.ask("go")
    saved = await h.stored()
    calls = [c for m in saved.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert len({c.id for c in calls}) == 2
    assert len({c.wire_id for c in calls}) == 2
    results = [m.call_id for m in saved.messages if isinstance(m, ToolResult)]
    assert results == [c.id for c in calls]


async def test_turn_limit_ends_with_a_final_answer_without_tools(store: SqliteStore) -> None:
    loop_step = step(call("todo_write", {"todos": []}))
    # keeps calling tools while it has any; answers in text once the engine offers none
    model = ScriptedModel(
        [], respond=lambda r: loop_step if r.tools else text("here is what I have"), max_calls=10
    )
    h = Harness(store, model, max_turns=3)
    await h.ask("loop forever")
    assert len(model.requests) == 4
    assert not model.requests[-1].tools
    assert "limit" in model.requests[-1].messages[-1].text  # type: ignore[union-attr]
    saved = await h.stored()
    assert saved.messages[-1].text == "here is what I have"  # type: ignore[union-attr]
    assert isinstance(h.events[-1], Finished)


async def test_model_failure_before_text_fails_cleanly(store: SqliteStore) -> None:
    h = harness(store, [ModelServerError("server error 500", status=500)])
    await h.ask("hi")
    assert isinstance(h.events[-1], Failed)
    assert "server" in h.events[-1].message
    saved = await h.stored()
    assert [type(m) for m in saved.messages] == [UserMessage]


async def test_stream_broken_after_text_keeps_the_shown_text(store: SqliteStore) -> None:
    pieces = text("partial ans")[:1]
    broken = call("todo_write", {"todos": []})[:2]
    h = harness(store, [(pieces + broken, ModelStreamBroken("cut off"))])
    await h.ask("hi")
    failed = h.events[-1]
    assert isinstance(failed, Failed) and "incomplete" in failed.message
    saved = await h.stored()
    last = saved.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert last.text == "partial ans" and last.tool_calls == ()


async def test_usage_and_cost_are_recorded(store: SqliteStore) -> None:
    usage = Usage(prompt_tokens=1000, completion_tokens=500)
    h = harness(
        store,
        [text("a", usage=usage), text("b", usage=usage)],
        price_input_per_mtok=2.0,
        price_output_per_mtok=8.0,
    )
    session = await h.ask("one")
    await h.store.save_state(session)
    await h.ask("two")
    session = await h.stored()
    assert session.usage.prompt_tokens == 2000 and session.usage.completion_tokens == 1000
    assert session.cost_usd == pytest.approx(2 * (1000 * 2.0 + 500 * 8.0) / 1e6)


def test_tool_schema_comes_from_signature_and_docstring() -> None:
    schema = explode.parameters
    assert schema["properties"]["reason"]["description"] == "Why."
    assert schema["required"] == ["reason"]
    assert explode.description == "Always fails."
    assert json.dumps(schema)


class Held:
    """Tools that stop until released: ``look`` changes nothing, ``launch`` has side effects."""

    def __init__(self) -> None:
        self.started: asyncio.Queue[str] = asyncio.Queue()
        self.release = asyncio.Event()

    async def _hold(self, what: str) -> str:
        await self.started.put(what)
        await self.release.wait()
        return f"{what}: ok"

    def tools(self) -> tuple[Tool, ...]:
        @tool
        async def look(ctx: ToolContext, what: str) -> str:
            """Looks at something.

            Args:
                what: What to look at.
            """
            return await self._hold(what)

        @tool(side_effects=True, approval="never")
        async def launch(ctx: ToolContext, what: str) -> str:
            """Launches something.

            Args:
                what: What to launch.
            """
            return await self._hold(what)

        return (look, launch)


async def _on_disk(tmp_path: Path) -> list[type]:
    """The transcript as another connection reads it from the file."""
    other = SqliteStore(tmp_path / "t.sqlite3")
    await other.open()
    try:
        return [type(m) for m in (await other.load_session(KEY, 0.0)).messages]
    finally:
        await other.close()


async def test_calls_without_side_effects_are_stored_with_their_results(
    store: SqliteStore, tmp_path: Path
) -> None:
    held = Held()
    steps = [
        step(call("look", {"what": "a"}, index=0), call("look", {"what": "b"}, index=1)),
        text("seen"),
    ]
    h = Harness(store, ScriptedModel(steps), held.tools())
    run = asyncio.create_task(h.ask("look around"))
    async with asyncio.timeout(5):
        assert await held.started.get() == "a"
    assert await _on_disk(tmp_path) == [UserMessage]  # nothing of this round trip yet
    held.release.set()
    await asyncio.wait_for(run, 5)
    assert await _on_disk(tmp_path) == [
        UserMessage,
        AssistantMessage,
        ToolResult,
        ToolResult,
        AssistantMessage,
    ]


async def test_a_call_with_side_effects_is_on_disk_before_it_runs(
    store: SqliteStore, tmp_path: Path
) -> None:
    held = Held()
    h = Harness(
        store, ScriptedModel([step(call("launch", {"what": "rocket"})), text("gone")]), held.tools()
    )
    run = asyncio.create_task(h.ask("launch it"))
    async with asyncio.timeout(5):
        assert await held.started.get() == "rocket"
    assert await _on_disk(tmp_path) == [UserMessage, AssistantMessage]
    held.release.set()
    await asyncio.wait_for(run, 5)
    assert await _on_disk(tmp_path) == [UserMessage, AssistantMessage, ToolResult, AssistantMessage]


async def test_stopping_inside_a_batch_keeps_the_call_and_answers_every_open_one(
    store: SqliteStore, tmp_path: Path
) -> None:
    held = Held()
    steps = [
        step(
            call("todo_write", {"todos": [{"content": "look", "status": "in_progress"}]}, index=0),
            call("look", {"what": "b"}, index=1),
        )
    ]
    h = Harness(store, ScriptedModel(steps), held.tools())
    run = asyncio.create_task(h.ask("look around"))
    async with asyncio.timeout(5):
        await held.started.get()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    saved = await h.stored()
    assert [type(m) for m in saved.messages] == [
        UserMessage,
        AssistantMessage,
        ToolResult,
        ToolResult,
    ]
    first, second = saved.messages[2:]
    assert isinstance(first, ToolResult) and not first.is_error
    assert isinstance(second, ToolResult) and second.content == STOPPED_RESULT
    assert open_calls(saved.messages) == []
    assert [t.content for t in saved.todos] == ["look"]
    assert await _on_disk(tmp_path) == [UserMessage, AssistantMessage, ToolResult, ToolResult]


async def test_an_empty_answer_is_asked_again_once_then_explained(store: SqliteStore) -> None:
    empty = [FinishPiece("stop")]
    h = harness(store, [empty, text("Here you go.")])
    await h.ask("hi")
    assert "empty" in h.model.requests[1].messages[-1].text  # type: ignore[union-attr]
    assert (await h.stored()).messages[-1].text == "Here you go."  # type: ignore[union-attr]

    h = harness(store, [empty, empty])
    await h.ask("hi again")
    shown = "".join(e.text for e in h.events if isinstance(e, TextDelta))
    assert "returned nothing" in shown
    assert (await h.stored()).messages[-1].text == shown  # type: ignore[union-attr]
    assert len(h.model.requests) == 2


async def test_a_blank_answer_counts_as_empty(store: SqliteStore) -> None:
    blank = text("   \n", "\t  ")
    h = harness(store, [blank, text("Here you go.")])
    await h.ask("hi")
    assert "empty" in h.model.requests[1].messages[-1].text  # type: ignore[union-attr]
    assert (await h.stored()).messages[-1].text == "Here you go."  # type: ignore[union-attr]

    h = harness(store, [blank, blank])
    await h.ask("hi again")
    shown = "".join(e.text for e in h.events if isinstance(e, TextDelta))
    assert "returned nothing" in shown
    assert (await h.stored()).messages[-1].text == EMPTY_WORDS  # type: ignore[union-attr]
    assert len(h.model.requests) == 2


async def test_a_turn_limit_with_no_words_at_the_end_still_says_something(
    store: SqliteStore,
) -> None:
    loop_step = step(call("todo_write", {"todos": []}))
    model = ScriptedModel(
        [], respond=lambda r: loop_step, max_calls=10
    )  # tools even when offered none
    h = Harness(store, model, max_turns=2)
    await h.ask("loop forever")
    assert len(model.requests) == 3
    shown = "".join(e.text for e in h.events if isinstance(e, TextDelta))
    assert "limit" in shown and "2 steps" in shown
    saved = await h.stored()
    assert saved.messages[-1].text == shown  # type: ignore[union-attr]
    assert not open_calls(saved.messages)


async def test_calls_cut_off_by_the_output_limit_never_run(store: SqliteStore) -> None:
    ran: list[str] = []

    @tool
    async def note(ctx: ToolContext, words: str) -> str:
        """Note something.

        Args:
            words: What.
        """
        ran.append(words)
        return "noted"

    cut = [*call("note", {"words": "complete json, cut answer"}), FinishPiece("length")]
    h = Harness(store, ScriptedModel([cut, text("ok")]), tools=(note,))
    await h.ask("note it")
    result = next(m for m in (await h.stored()).messages if isinstance(m, ToolResult))
    assert result.is_error and "cut off" in result.content
    assert ran == []


async def test_a_result_is_stored_before_the_tool_is_reported_finished(store: SqliteStore) -> None:
    """A crash right after a call with side effects finished never reports it as interrupted."""
    seen: list[bool] = []

    @tool(side_effects=True)
    async def launch(ctx: ToolContext, target: str) -> str:
        """Launch.

        Args:
            target: Where.
        """
        return f"launched {target}"

    class Watching(Harness):
        async def sink(self, event: EngineEvent) -> None:
            if isinstance(event, ToolFinished):
                stored = await self.store.load_session(KEY, 0.0)
                seen.append(
                    any(
                        isinstance(m, ToolResult) and m.call_id == event.call_id
                        for m in stored.messages
                    )
                )
            await super().sink(event)

    h = Watching(
        store, ScriptedModel([step(call("launch", {"target": "x"})), text("done")]), tools=(launch,)
    )
    await h.ask("go")
    assert seen == [True]
