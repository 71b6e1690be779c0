"""The real ``openai`` client against the fake OpenAI server."""

from __future__ import annotations

import asyncio
import errno
import json
import random
import socket
import traceback
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bot.config import Settings
from bot.errors import (
    ContextOverflow,
    ModelError,
    ModelRateLimited,
    ModelRejected,
    ModelServerError,
    ModelStreamBroken,
    ModelUnavailable,
)
from bot.llm.messages import AssistantMessage, ToolCall, ToolResult, Usage, UserMessage
from bot.llm.model import (
    FinishPiece,
    ModelPiece,
    ModelRequest,
    TextPiece,
    ToolCallPiece,
    ToolSpec,
    UsagePiece,
    WaitPiece,
)
from bot.llm.openai_model import OpenAIModel, build_openai_model
from bot.llm.retry import Backoff
from bot.llm.unreachable import unreachable_reason
from bot.llm.wire import as_data
from tests.fakes.openai_server import (
    CutOff,
    Delay,
    FakeCall,
    FakeOpenAI,
    Fault,
    Malformed,
    Raw,
    Reply,
    StreamError,
)

KEY = "sk-test-0123456789abcdefSECRET"
TODO = ToolSpec("todo_write", "Replace the todo list.", {"type": "object", "properties": {}})
REQUEST = ModelRequest(
    system="You are Threadline.",
    messages=[UserMessage(text="hello", author_id="U1", author_name="Alice")],
    tools=(TODO,),
)


@dataclass
class InstantClock:
    """A clock whose ``sleep`` records the delay and returns at once."""

    sleeps: list[float] = field(default_factory=list)
    mono: float = 0.0

    def now(self) -> float:
        return 1_700_000_000.0 + self.mono

    def monotonic(self) -> float:
        return self.mono

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.mono += seconds
        await asyncio.sleep(0)


@dataclass
class Result:
    pieces: list[ModelPiece]

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.pieces if isinstance(p, TextPiece))

    @property
    def calls(self) -> dict[int, dict[str, str]]:
        """Tool-call fragments joined by index, as an engine collects them."""
        calls: dict[int, dict[str, str]] = {}
        for p in self.pieces:
            if isinstance(p, ToolCallPiece):
                call = calls.setdefault(p.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = call["id"] or (p.id or "")
                call["name"] = call["name"] or (p.name or "")
                call["arguments"] += p.arguments
        return calls

    @property
    def finish(self) -> list[str | None]:
        return [p.reason for p in self.pieces if isinstance(p, FinishPiece)]

    @property
    def usage(self) -> list[Usage]:
        return [p.usage for p in self.pieces if isinstance(p, UsagePiece)]


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

    def make(*, max_retries: int = 3, base_url: str | None = None, **kwargs: object) -> OpenAIModel:
        model = OpenAIModel(
            "gpt-4o-mini",
            api_key=KEY,
            base_url=base_url or fake.base_url,
            clock=clock,
            backoff=Backoff(max_retries=max_retries, rng=random.Random(3)),
            **kwargs,  # type: ignore[arg-type]
        )
        made.append(model)
        return model

    yield make
    for model in made:
        await model.aclose()


async def run(model: OpenAIModel, request: ModelRequest = REQUEST) -> Result:
    return Result([piece async for piece in model.stream(request)])


async def failure(model: OpenAIModel, request: ModelRequest = REQUEST) -> tuple[ModelError, Result]:
    seen: list[ModelPiece] = []
    with pytest.raises(ModelError) as caught:
        async for piece in model.stream(request):
            seen.append(piece)
    return caught.value, Result(seen)


async def test_streams_text_finish_and_usage(fake: FakeOpenAI, make_model: MakeModel) -> None:
    fake.push(
        Reply(
            "Hello Alice, here is the plan.",
            prompt_tokens=120,
            completion_tokens=9,
            cached_tokens=64,
        )
    )
    model = make_model()
    got = await run(model)
    assert got.text == "Hello Alice, here is the plan."
    assert len([p for p in got.pieces if isinstance(p, TextPiece)]) > 3  # it really streamed
    assert got.finish == ["stop"]
    assert got.usage == [Usage(prompt_tokens=120, completion_tokens=9, cached_tokens=64)]
    assert model.label == "gpt-4o-mini" and model.name == "gpt-4o-mini"


async def test_sends_our_wire_body_with_the_key(fake: FakeOpenAI, make_model: MakeModel) -> None:
    fake.push(Reply("ok"))
    model = make_model()
    await run(model, ModelRequest("sys", REQUEST.messages, (TODO,), max_tokens=300))
    (seen,) = fake.requests
    assert seen.headers["Authorization"] == f"Bearer {KEY}"
    assert seen.headers["Content-Type"] == "application/json"
    assert seen.body["model"] == "gpt-4o-mini"
    assert seen.body["stream"] is True
    assert seen.body["stream_options"] == {"include_usage": True}
    assert seen.body["max_tokens"] == 300
    assert seen.messages == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "[Alice]: hello"},
    ]
    assert [t["function"]["name"] for t in seen.body["tools"]] == ["todo_write"]


async def test_tool_call_fragments_come_back_by_index(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    todos = {"todos": [{"content": "Plan", "status": "in_progress"}]}
    fake.push(
        Reply(
            "Planning.",
            calls=[
                FakeCall("todo_write", todos, id="call_abc"),
                FakeCall("search", '{"q": "release notes"}', id="call_def"),
            ],
            argument_fragments=4,
        )
    )
    got = await run(make_model())
    assert got.text == "Planning."
    assert len([p for p in got.pieces if isinstance(p, ToolCallPiece)]) >= 8
    assert got.calls == {
        0: {"id": "call_abc", "name": "todo_write", "arguments": json.dumps(todos)},
        1: {"id": "call_def", "name": "search", "arguments": '{"q": "release notes"}'},
    }
    assert got.finish == ["tool_calls"]


async def test_a_tool_loop_round_trip_keeps_provider_ids(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    fake.push(Reply("done"))
    call = ToolCall(id="call_ours", wire_id="call_theirs", name="todo_write", arguments="{}")
    messages = [
        *REQUEST.messages,
        AssistantMessage(tool_calls=(call,)),
        ToolResult(call_id="call_ours", name="todo_write", content="saved"),
    ]
    await run(make_model(), ModelRequest("sys", messages, (TODO,)))
    wire = fake.requests[0].messages
    assert wire[2]["tool_calls"][0]["id"] == "call_theirs"
    assert wire[3] == {
        "role": "tool",
        "tool_call_id": "call_theirs",
        "content": as_data("todo_write", "saved"),
    }


async def test_server_errors_are_retried_with_backoff(
    fake: FakeOpenAI, make_model: MakeModel, clock: InstantClock
) -> None:
    fake.push(
        Fault.server_error(500), Fault.server_error(502), Fault.server_error(503), Reply("finally")
    )
    got = await run(make_model(max_retries=3))
    assert got.text == "finally"
    assert len(fake.requests) == 4
    assert len(clock.sleeps) == 3
    assert all(0 <= s <= ceiling for s, ceiling in zip(clock.sleeps, (0.5, 1.0, 2.0), strict=True))


async def test_retries_exhausted_raise_the_server_error(
    fake: FakeOpenAI, make_model: MakeModel, clock: InstantClock
) -> None:
    fake.push(*[Fault.server_error()] * 3)
    error, _ = await failure(make_model(max_retries=2))
    assert isinstance(error, ModelServerError)
    assert error.status == 500
    assert "HTTP 500" in str(error)
    assert len(fake.requests) == 3
    assert len(clock.sleeps) == 2


@pytest.mark.parametrize(
    ("fault", "wait"),
    [
        (Fault.rate_limited(retry_after="7"), 7.0),
        (Fault.rate_limited(retry_after_ms="1500"), 1.5),
        (
            Fault(503, "The engine is currently overloaded.", type="server_error", retry_after="3"),
            3.0,
        ),
    ],
)
async def test_rate_limits_honour_retry_after(
    fake: FakeOpenAI, make_model: MakeModel, clock: InstantClock, fault: Fault, wait: float
) -> None:
    fake.push(fault, Reply("after the wait"))
    got = await run(make_model())
    assert got.text == "after the wait"
    assert clock.sleeps == [wait]


async def test_a_rate_limit_that_never_lifts_says_how_long(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    fake.push(Fault.rate_limited(retry_after="600"))
    error, _ = await failure(make_model())
    assert isinstance(error, ModelRateLimited)
    assert error.retry_after == 600.0
    assert len(fake.requests) == 1


async def test_a_long_retry_after_is_waited_out_and_announced(
    fake: FakeOpenAI, make_model: MakeModel, clock: InstantClock
) -> None:
    fake.push(Fault.rate_limited(retry_after="120"), Reply("after two minutes"))
    got = await run(make_model())
    assert got.pieces[0] == WaitPiece(120.0)  # before anything else: the thread is told
    assert got.text == "after two minutes" and clock.sleeps == [120.0]


async def test_a_retry_after_beyond_the_bound_is_not_waited(
    fake: FakeOpenAI, make_model: MakeModel, clock: InstantClock
) -> None:
    fake.push(Fault.rate_limited(retry_after="181"), Reply("never"))
    error, got = await failure(make_model())
    assert isinstance(error, ModelRateLimited) and error.retry_after == 181.0
    assert got.pieces == [] and clock.sleeps == [] and len(fake.requests) == 1


async def test_the_bound_is_a_setting(
    tmp_path: Path, fake: FakeOpenAI, clock: InstantClock
) -> None:
    settings = Settings(
        _env_file=None,
        data_dir=tmp_path,
        openai_base_url=fake.base_url,
        openai_api_key=KEY,
        model_retry_after_max_s=30,
    )
    model = build_openai_model(settings, clock, rng=random.Random(1))  # type: ignore[arg-type]
    try:
        fake.push(Fault.rate_limited(retry_after="31"))
        error, _ = await failure(model)
        assert isinstance(error, ModelRateLimited) and clock.sleeps == []
    finally:
        await model.aclose()


@pytest.mark.parametrize(
    ("body", "content_type", "what", "words"),
    [
        (b"data: [DONE]\n\n", "text/event-stream", "empty", "sent nothing (an empty stream)"),
        (b"", "text/event-stream", "empty", "sent nothing"),
        (b"data: <html>oops</html>\n\n", "text/event-stream", "invalid", "was not JSON"),
        (b"data: [1, 2]\n\n", "text/event-stream", "invalid", "was not an object"),
        (
            b'{"choices": [{"message": {"content": "hi"}}]}',
            "application/json",
            "invalid",
            "answered with application/json, not a stream of events",
        ),
    ],
)
async def test_a_stream_that_is_empty_or_not_valid_says_which(
    fake: FakeOpenAI,
    make_model: MakeModel,
    body: bytes,
    content_type: str,
    what: str,
    words: str,
) -> None:
    fake.push(*[Raw(body, content_type=content_type)] * 4)
    error, got = await failure(make_model())
    assert isinstance(error, ModelStreamBroken) and error.what == what
    assert words in str(error) and got.pieces == []
    assert len(fake.requests) == 4  # retried like any broken stream, then said


async def test_an_exhausted_quota_is_not_retried(fake: FakeOpenAI, make_model: MakeModel) -> None:
    fake.push(
        Fault(
            429,
            "You exceeded your current quota, please check your plan and billing details.",
            type="insufficient_quota",
            code="insufficient_quota",
        )
    )
    error, _ = await failure(make_model())
    assert isinstance(error, ModelRejected)
    assert "quota" in str(error) and "OPENAI_API_KEY" in str(error)
    assert len(fake.requests) == 1


async def test_a_refused_key_is_named_and_never_shown(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    fake.push(Fault.bad_key(shown_key=KEY))
    error, _ = await failure(make_model())
    assert isinstance(error, ModelRejected)
    assert error.status == 401
    assert "OPENAI_API_KEY" in str(error)
    assert KEY not in str(error) and "SECRET" not in repr(error)
    assert KEY not in "".join(traceback.format_exception(error))
    assert len(fake.requests) == 1


async def test_an_unknown_model_names_the_setting(fake: FakeOpenAI, make_model: MakeModel) -> None:
    fake.push(Fault.unknown_model("gpt-4o-mini"))
    error, _ = await failure(make_model())
    assert isinstance(error, ModelRejected)
    assert "THREADLINE_MODEL" in str(error)
    assert "gpt-4o-mini" in str(error)


async def test_other_client_errors_pass_the_servers_words(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    fake.push(Fault(400, "Invalid schema for function 'todo_write'.", param="tools"))
    error, _ = await failure(make_model())
    assert isinstance(error, ModelRejected)
    assert "Invalid schema for function 'todo_write'." in str(error)
    assert len(fake.requests) == 1


async def test_context_overflow_is_recognised(fake: FakeOpenAI, make_model: MakeModel) -> None:
    fake.push(Fault.context_overflow())
    error, _ = await failure(make_model())
    assert isinstance(error, ContextOverflow)
    assert len(fake.requests) == 1


async def test_context_overflow_from_other_servers_by_its_words(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    fake.push(Fault(400, "Input is too long: exceeds the model's context window of 8192 tokens"))
    error, _ = await failure(make_model())
    assert isinstance(error, ContextOverflow)


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_an_unreachable_server_is_unavailable(
    make_model: MakeModel, clock: InstantClock
) -> None:
    model = make_model(max_retries=1, base_url=f"http://proxy:hunter2@127.0.0.1:{closed_port()}/v1")
    error, got = await failure(model)
    assert isinstance(error, ModelUnavailable)
    assert "could not reach the model server at http://127.0.0.1:" in str(error)
    assert KEY not in str(error) and "hunter2" not in str(error)
    assert got.pieces == []
    assert len(clock.sleeps) == 1


@pytest.mark.parametrize("credentials", ["", "proxy:hunter2@"], ids=["aiohttp", "httpx"])
async def test_a_closed_port_is_a_refused_connection_not_a_timeout(
    make_model: MakeModel, credentials: str
) -> None:
    # a URL with credentials goes through the client's default transport, one without through
    # its aiohttp transport, which reports every failed connect as a timeout
    model = make_model(max_retries=0, base_url=f"http://{credentials}127.0.0.1:{closed_port()}/v1")
    error, _ = await failure(model)
    assert isinstance(error, ModelUnavailable)
    assert "could not reach the model server at http://127.0.0.1:" in str(error)
    assert "the connection was refused" in str(error)
    assert "did not answer" not in str(error) and "within" not in str(error)


@pytest.mark.parametrize("credentials", ["", "proxy:hunter2@"], ids=["aiohttp", "httpx"])
async def test_an_unresolvable_name_is_said_so(make_model: MakeModel, credentials: str) -> None:
    model = make_model(max_retries=0, base_url=f"http://{credentials}nonexistent.invalid/v1")
    error, _ = await failure(model)
    assert isinstance(error, ModelUnavailable)
    assert str(error).startswith(
        "could not reach the model server at http://nonexistent.invalid/v1: "
        "the name nonexistent.invalid could not be resolved ("
    )
    assert "hunter2" not in str(error)


def test_the_reason_is_found_anywhere_in_the_cause_chain() -> None:
    def raised(inner: BaseException, *wrappers: type[Exception]) -> BaseException:
        try:
            try:
                raise inner
            except BaseException as exc:
                for wrapper in wrappers:
                    try:
                        raise wrapper("outer") from exc
                    except Exception as wrapped:
                        exc = wrapped
                raise exc
        except BaseException as caught:
            return caught

    unreachable = OSError(errno.ENETUNREACH, "Network is unreachable")
    no_route = OSError(errno.EHOSTUNREACH, "No route to host")
    assert "no route to it (Network is unreachable)" in str(
        unreachable_reason(raised(unreachable, OSError, RuntimeError), "api.openai.com")
    )
    assert "no route to it (No route to host)" in str(unreachable_reason(raised(no_route), "h"))
    refused = OSError(errno.ECONNREFUSED, "Connect call failed")  # aiohttp's own error shape
    assert "refused" in str(unreachable_reason(raised(refused, RuntimeError), "h"))
    dns = socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
    assert unreachable_reason(raised(dns, RuntimeError), "h") == (
        "the name h could not be resolved (Temporary failure in name resolution; offline?)"
    )
    assert unreachable_reason(raised(TimeoutError(), RuntimeError), "h") is None
    assert unreachable_reason(RuntimeError("no cause"), "h") is None


async def test_a_silent_server_times_out(fake: FakeOpenAI, make_model: MakeModel) -> None:
    gate = asyncio.Event()
    fake.push(Delay(Reply("too late"), until=gate))
    try:
        error, _ = await failure(make_model(max_retries=0, timeout_s=0.2))
    finally:
        gate.set()
    assert isinstance(error, ModelUnavailable)
    assert "did not answer within 0.2s" in str(error)


@pytest.mark.parametrize("drop_connection", [True, False])
async def test_a_stream_cut_after_text_is_broken_and_not_retried(
    fake: FakeOpenAI, make_model: MakeModel, clock: InstantClock, drop_connection: bool
) -> None:
    fake.push(
        CutOff(Reply("Here is the first part of a long answer"), 4, drop_connection), Reply("x")
    )
    error, got = await failure(make_model())
    assert isinstance(error, ModelStreamBroken)
    assert got.text == "Here is the first part of a"[: len(got.text)] and got.text
    assert len(fake.requests) == 1
    assert clock.sleeps == []


async def test_a_stream_cut_before_any_piece_is_retried(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    fake.push(CutOff(Reply("lost"), 1), Reply("second try"))
    got = await run(make_model())
    assert got.text == "second try"
    assert len(fake.requests) == 2


async def test_a_malformed_chunk_breaks_the_stream(fake: FakeOpenAI, make_model: MakeModel) -> None:
    fake.push(Malformed(Reply("one two three four five six seven"), at_chunk=3), Reply("x"))
    error, got = await failure(make_model())
    assert isinstance(error, ModelStreamBroken) and error.what == "invalid"
    assert "not valid (a chunk was not JSON)" in str(error)
    assert got.text  # the first chunks arrived before the broken one
    assert len(fake.requests) == 1


async def test_an_error_event_after_text_is_raised_without_retry(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    fake.push(StreamError(Reply("partial answer here"), after_chunks=3), Reply("x"))
    error, got = await failure(make_model())
    assert isinstance(error, ModelServerError)
    assert "Sorry about that" in str(error)
    assert got.text
    assert len(fake.requests) == 1


async def test_an_error_event_about_context_length_is_an_overflow(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    fake.push(
        StreamError(Reply("x"), 0, "maximum context length exceeded", "invalid_request_error")
    )
    error, _ = await failure(make_model())
    assert isinstance(error, ContextOverflow)
    assert len(fake.requests) == 1


async def test_leaving_a_stream_early_releases_everything(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    fake.push(Reply("a long answer that nobody reads to the end"), Reply("next"))
    model = make_model()
    stream = model.stream(REQUEST)
    async for piece in stream:
        assert isinstance(piece, TextPiece)
        break
    await stream.aclose()  # type: ignore[attr-defined]
    assert (await run(model)).text == "next"


async def test_a_cancelled_call_releases_everything(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    gate = asyncio.Event()
    fake.push(Delay(Reply("never seen"), until=gate), Reply("next"))
    model = make_model()
    task = asyncio.create_task(run(model))
    await fake.wait_for_requests(1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.set()
    assert (await run(model)).text == "next"


async def test_concurrent_calls_share_one_model(fake: FakeOpenAI, make_model: MakeModel) -> None:
    fake.default = lambda body: Reply(f"echo {body['messages'][-1]['content']}")
    model = make_model()
    requests = [ModelRequest("", [UserMessage(text=f"m{i}")], ()) for i in range(5)]
    results = await asyncio.gather(*(run(model, r) for r in requests))
    assert [r.text for r in results] == [f"echo m{i}" for i in range(5)]


async def test_build_uses_the_configured_endpoint(
    fake: FakeOpenAI, clock: InstantClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("THREADLINE_CONFIG", raising=False)
    settings = Settings(
        _env_file=None,
        openai_api_key=KEY,
        openai_base_url=fake.base_url,
        model="llama3.1:8b",
        model_max_retries=1,
    )
    fake.push(Fault.server_error(), Reply("from the configured server"))
    model = build_openai_model(settings, clock, rng=random.Random(1))
    try:
        got = await run(model, ModelRequest("", REQUEST.messages, (), max_tokens=50))
    finally:
        await model.aclose()
    assert got.text == "from the configured server"
    assert model.label == "llama3.1:8b"
    assert fake.requests[-1].body["model"] == "llama3.1:8b"
    assert fake.requests[-1].body["max_tokens"] == 50
    assert len(clock.sleeps) == 1


def _sse(*deltas: dict[str, object], finish: str = "tool_calls") -> bytes:
    chunks = [{"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"


async def test_calls_numbered_alike_are_told_apart_by_their_ids(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    """Some servers number every call 0, or leave the number out: a fragment with a new id and
    a name starts a new call; fragments without an id (or with the same one) go on."""
    first = {"index": 0, "id": "0", "function": {"name": "a", "arguments": ""}}
    more = {"index": 0, "id": "0", "function": {"arguments": '{"x": 1}'}}
    second = {"index": 0, "id": "1", "function": {"name": "b", "arguments": "{"}}
    rest = {"function": {"arguments": "}"}}
    third = {"id": "call_c", "function": {"name": "c", "arguments": "{}"}}
    fake.push(
        Raw(
            _sse(
                {"tool_calls": [first]},
                {"tool_calls": [more]},
                {"tool_calls": [second]},
                {"tool_calls": [rest]},
                {"tool_calls": [third]},
            )
        )
    )
    got = await run(make_model())
    assert [(c["id"], c["name"], c["arguments"]) for c in got.calls.values()] == [
        ("0", "a", '{"x": 1}'),
        ("1", "b", "{}"),
        ("call_c", "c", "{}"),
    ]


async def test_the_older_function_call_delta_reads_as_a_tool_call(
    fake: FakeOpenAI, make_model: MakeModel
) -> None:
    fake.push(
        Raw(
            _sse(
                {"role": "assistant", "function_call": {"name": "todo_write", "arguments": ""}},
                {"function_call": {"arguments": '{"todos": []}'}},
                finish="function_call",
            )
        )
    )
    got = await run(make_model())
    assert list(got.calls.values()) == [
        {"id": "", "name": "todo_write", "arguments": '{"todos": []}'}
    ]
    assert got.finish == ["function_call"]
