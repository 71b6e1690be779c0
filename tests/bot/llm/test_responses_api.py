"""OpenAI's Responses API (``THREADLINE_OPENAI_API=responses``): the real ``openai`` client
against the fake server's ``/v1/responses``, and the core keeping the model's encrypted
reasoning with the thread."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.api.inbound import Author, Inbound, ThreadKey
from bot.config import Settings, load_settings
from bot.core import Core
from bot.errors import (
    ConfigError,
    ContextOverflow,
    ModelRejected,
    ModelServerError,
    ModelStreamBroken,
)
from bot.infra.clock import ManualClock
from bot.llm.messages import AssistantMessage, ToolCall, ToolResult, Usage, UserMessage
from bot.llm.model import FinishPiece, ModelRequest, ReasoningPiece, ToolCallPiece
from bot.llm.openai_model import OpenAIModel, build_openai_model
from bot.llm.retry import Backoff
from bot.llm.wire import as_data
from bot.tools.builtin import builtin_tools
from bot.tools.registry import ToolRegistry
from tests.bot.llm.test_openai_model import (
    KEY,
    REQUEST,
    TODO,
    InstantClock,
    failure,
    run,
)
from tests.fakes.openai_responses import Failed
from tests.fakes.openai_server import (
    CutOff,
    FakeCall,
    FakeOpenAI,
    Fault,
    Raw,
    Reply,
    StreamError,
)
from tests.fakes.surface import RecordingSurface, drive

MakeModel = Callable[..., OpenAIModel]


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
def clock() -> InstantClock:
    return InstantClock()


@pytest.fixture
async def make_model(fake: FakeOpenAI, clock: InstantClock) -> AsyncIterator[MakeModel]:
    made: list[OpenAIModel] = []

    def make(*, max_retries: int = 3) -> OpenAIModel:
        model = OpenAIModel(
            "o4-mini",
            api_key=KEY,
            base_url=fake.base_url,
            clock=clock,
            backoff=Backoff(max_retries=max_retries, rng=random.Random(3)),
            api="responses",
        )
        made.append(model)
        return model

    yield make
    for model in made:
        await model.aclose()


async def test_streams_text_usage_and_its_reasoning(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    fake.push(Reply("Hello Alice, here is the plan.", prompt_tokens=120, completion_tokens=9))
    got = await run(make_model(), REQUEST)
    assert got.text == "Hello Alice, here is the plan."
    assert got.finish == ["stop"]
    assert got.usage == [Usage(prompt_tokens=120, completion_tokens=9)]
    [reasoning] = [p.item for p in got.pieces if isinstance(p, ReasoningPiece)]
    assert json.loads(reasoning) == fake.reasoning_issued[0]
    [request] = fake.requests
    body = request.body
    assert body["model"] == "o4-mini" and body["stream"] is True and body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["instructions"] == "You are Threadline."
    assert body["input"] == [{"role": "user", "content": "[Alice]: hello"}]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "todo_write",
            "description": "Replace the todo list.",
            "parameters": {"type": "object", "properties": {}},
            "strict": False,
        }
    ]
    assert request.headers["Authorization"] == f"Bearer {KEY}"


async def test_function_calls_come_back_by_output_index(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    fake.push(
        Reply(
            calls=[FakeCall("todo_write", {"todos": []}, id="call_a"), FakeCall("grep", {"p": 1})]
        )
    )
    got = await run(make_model())
    calls = [p for p in got.pieces if isinstance(p, ToolCallPiece)]
    firsts = [p for p in calls if p.name]
    assert [(p.id, p.name) for p in firsts] == [("call_a", "todo_write"), (firsts[1].id, "grep")]
    by_index: dict[int, str] = {}
    for piece in calls:
        by_index[piece.index] = by_index.get(piece.index, "") + piece.arguments
    assert sorted(by_index.values()) == ['{"p": 1}', '{"todos": []}']
    assert got.finish == ["tool_calls"]


async def test_a_round_trip_sends_reasoning_calls_and_results_back(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    issued = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-x"}
    call = ToolCall(id="call_ours", wire_id="call_wire", name="todo_write", arguments="{}")
    messages = [
        UserMessage(text="plan it", images=("data:image/png;base64,AAAA",)),
        AssistantMessage(text="On it.", tool_calls=(call,), reasoning=(json.dumps(issued),)),
        ToolResult(call_id="call_ours", name="todo_write", content="Todo list updated."),
    ]
    fake.push(Reply("Done."))
    await run(make_model(), ModelRequest("", messages, (TODO,)))
    assert fake.requests[0].body["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "plan it"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
            ],
        },
        issued,
        {"role": "assistant", "content": "On it."},
        {"type": "function_call", "call_id": "call_wire", "name": "todo_write", "arguments": "{}"},
        {
            "type": "function_call_output",
            "call_id": "call_wire",
            "output": as_data("todo_write", "Todo list updated."),
        },
    ]
    assert "instructions" not in fake.requests[0].body


async def test_an_answer_cut_by_its_output_limit_says_length(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    fake.push(Reply("Half an ans", finish_reason="length"))
    got = await run(make_model(), ModelRequest("", REQUEST.messages, (), max_tokens=5))
    assert got.finish == ["length"] and got.text == "Half an ans"
    assert fake.requests[0].body["max_output_tokens"] == 16  # the least the API accepts


@pytest.mark.parametrize("drop_connection", [True, False])
async def test_a_stream_cut_mid_item_before_any_text_is_retried(
    fake: FakeOpenAI, make_model: MakeModel, drop_connection: bool
) -> None:
    fake.push(CutOff(Reply("lost"), 2, drop_connection), Reply("second try"))
    got = await run(make_model())
    assert got.text == "second try"
    assert len(fake.requests) == 2


@pytest.mark.parametrize("drop_connection", [True, False])
async def test_a_stream_cut_mid_item_after_text_is_broken_and_not_retried(
    fake: FakeOpenAI, make_model: MakeModel, clock: InstantClock, drop_connection: bool
) -> None:
    fake.push(CutOff(Reply("Here is the first part of a long answer"), 6, drop_connection))
    error, got = await failure(make_model())
    assert isinstance(error, ModelStreamBroken)
    assert "broke in the middle" in str(error) or "stopped before it was finished" in str(error)
    assert got.text and "Here is the first part of a long answer".startswith(got.text)
    assert FinishPiece("stop") not in got.pieces
    assert len(fake.requests) == 1 and clock.sleeps == []


async def test_an_error_event_gives_the_servers_words(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    fake.push(StreamError(Reply("Some words first"), 5, message="The engine overheated."))
    error, got = await failure(make_model())
    assert isinstance(error, ModelServerError)
    assert "The engine overheated." in str(error)
    assert got.text and len(fake.requests) == 1


async def test_an_error_event_in_the_chat_shape_is_read_too(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    error_event = {"type": "error", "error": {"message": "Overloaded.", "code": "server_error"}}
    fake.push(Raw(f"event: error\ndata: {json.dumps(error_event)}\n\n".encode()))
    error, _ = await failure(make_model(max_retries=0))
    assert isinstance(error, ModelServerError) and "Overloaded." in str(error)


async def test_an_error_event_about_context_length_is_an_overflow(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    fake.push(
        StreamError(
            Reply("x"),
            1,
            message="Your input exceeds the context window of this model.",
            code="context_length_exceeded",
        )
    )
    error, _ = await failure(make_model())
    assert isinstance(error, ContextOverflow)


async def test_a_failed_response_gives_the_servers_words_without_the_key(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    fake.push(Failed(Reply("Partial"), 4, message=f"Upstream refused {KEY} today."))
    error, _ = await failure(make_model())
    assert isinstance(error, ModelServerError)
    assert "Upstream refused" in str(error) and KEY not in str(error)


async def test_http_errors_are_read_as_on_the_chat_endpoint(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    fake.push(Fault.bad_key(KEY))
    error, _ = await failure(make_model())
    assert isinstance(error, ModelRejected) and "Check OPENAI_API_KEY." in str(error)
    assert KEY not in str(error)


async def test_a_model_that_does_not_reason_is_asked_without_reasoning(
    fake: FakeOpenAI, clock: InstantClock
) -> None:
    model = OpenAIModel(
        "gpt-4o",
        api_key=KEY,
        base_url=fake.base_url,
        clock=clock,
        backoff=Backoff(max_retries=0, rng=random.Random(3)),
        api="responses",
    )
    fake.push(Reply("Plain answer."), Reply("Again."))
    try:
        assert (await run(model)).text == "Plain answer."
        assert (await run(model)).text == "Again."  # remembered: asked once
    finally:
        await model.aclose()
    assert ["include" in r.body for r in fake.requests] == [True, False, False]
    assert clock.sleeps == [] and fake.reasoning_issued == []


def test_the_setting_is_chat_or_responses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("THREADLINE_CONFIG", raising=False)
    assert Settings(_env_file=None).openai_api == "chat"
    monkeypatch.setenv("THREADLINE_OPENAI_API", "assistants")
    with pytest.raises(ConfigError) as caught:
        load_settings(_env_file=None)
    assert caught.value.setting == "THREADLINE_OPENAI_API"
    assert caught.value.problem == "must be one of chat, responses (not 'assistants')"


async def test_a_route_may_keep_chat_completions(
    fake: FakeOpenAI, clock: InstantClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("THREADLINE_CONFIG", raising=False)
    settings = Settings(
        _env_file=None,
        openai_api_key=KEY,
        openai_base_url=fake.base_url,
        model="o4-mini",
        openai_api="responses",
        per_model={"llama3.1": {"base_url": fake.base_url, "openai_api": "chat"}},
    )
    fake.push(Reply("by responses"), Reply("by chat"))
    model = build_openai_model(settings, clock, rng=random.Random(1))
    try:
        assert (await run(model)).text == "by responses"
        local = ModelRequest("", REQUEST.messages, (), model="llama3.1")
        assert (await run(model, local)).text == "by chat"
    finally:
        await model.aclose()
    assert "input" in fake.requests[0].body and "messages" in fake.requests[1].body


# --- through the core: the reasoning kept with the thread ---

THREAD = ThreadKey("test:responses")
ALICE = Author(id="test:U1", display_name="Alice")
TODOS = {"todos": [{"content": "look", "status": "in_progress"}]}


class World:
    def __init__(self, tmp_path: Path, base_url: str) -> None:
        self.clock = ManualClock(start=1_000_000.0)
        self.settings = Settings(
            _env_file=None,
            data_dir=tmp_path,
            openai_base_url=base_url,
            openai_api_key=KEY,
            openai_api="responses",
            model="o4-mini",
        )
        model = build_openai_model(self.settings, self.clock, rng=random.Random(1))
        from bot.storage.sqlite.store import SqliteStore

        store = SqliteStore(self.settings.database_path)
        self.core = Core(self.settings, store, model, ToolRegistry(builtin_tools()), self.clock)
        self.surface = RecordingSurface(self.clock, thread_key=THREAD)
        self._n = 0

    async def say(self, words: str) -> None:
        self._n += 1
        inbound = Inbound(THREAD, ALICE, words, f"ev{self._n}")
        await drive(self.clock, self.core.handle(inbound, self.surface), step=0.5)

    async def session(self) -> Any:
        return await self.core.store.load_session(THREAD, self.clock.now())


def reasoning_sent(request: Any) -> list[dict[str, Any]]:
    return [item for item in request.body["input"] if item.get("type") == "reasoning"]


async def test_reasoning_is_kept_with_the_thread_and_sent_back_every_round_and_turn(
    tmp_path: Path, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("THREADLINE_CONFIG", raising=False)
    fake.push(
        Reply(calls=[FakeCall("todo_write", TODOS)]),
        Reply("Looked."),
        Reply("Still here."),
    )
    world = World(tmp_path, fake.base_url)
    await world.core.start()
    try:
        await world.say("look at it")
        await world.say("and now?")
        session = await world.session()
    finally:
        await world.core.aclose()
    first, second, third = fake.requests
    issued = fake.reasoning_issued
    assert reasoning_sent(first) == []
    assert reasoning_sent(second) == issued[:1]  # the next round
    assert reasoning_sent(third) == issued[:2]  # the next turn
    answers = [m for m in session.messages if isinstance(m, AssistantMessage)]
    assert [[json.loads(r) for r in m.reasoning] for m in answers] == [
        [issued[0]],
        [issued[1]],
        [issued[2]],
    ]
    assert world.surface.texts()[-1] == "Still here."
    call = third.body["input"][2]
    assert call["type"] == "function_call" and call["name"] == "todo_write"
    assert third.body["input"][3]["call_id"] == call["call_id"]
