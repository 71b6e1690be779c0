"""The offline demo model, through the real client and ``build_openai_model``."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest

from bot.clock import ManualClock
from bot.config import Settings
from bot.llm.demo import DEMO_LABEL, DemoTransport, demo_turn
from bot.llm.messages import AssistantMessage, Message, ToolCall, ToolResult, UserMessage
from bot.llm.model import FinishPiece, ModelRequest, TextPiece, ToolCallPiece, ToolSpec, UsagePiece
from bot.llm.openai_model import OpenAIModel, build_openai_model
from bot.sessions.model import Todo

TODO = ToolSpec("todo_write", "Replace the todo list.", {"type": "object", "properties": {}})
QUESTION = UserMessage(
    text="How do I cut a release\nwith the new pipeline?", author_id="U1", author_name="Alice"
)


@pytest.fixture
async def demo(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[OpenAIModel]:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "THREADLINE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings(_env_file=None)
    assert settings.uses_demo_model
    model = build_openai_model(settings, ManualClock(), rng=random.Random(0), demo_chunk_delay_s=0)
    yield model
    await model.aclose()


async def call(
    model: OpenAIModel, messages: list[Message], tools: tuple[ToolSpec, ...] = (TODO,)
) -> AssistantMessage:
    """One model call, collected the way the engine does (fragments joined by index)."""
    text: list[str] = []
    parts: dict[int, dict[str, str]] = {}
    finish: list[str | None] = []
    usage = 0
    async for piece in model.stream(ModelRequest("You are Threadline.", messages, tools)):
        match piece:
            case TextPiece(t):
                text.append(t)
            case ToolCallPiece(index, call_id, name, arguments):
                part = parts.setdefault(index, {"id": "", "name": "", "arguments": ""})
                part["id"] = part["id"] or (call_id or "")
                part["name"] = part["name"] or (name or "")
                part["arguments"] += arguments
            case UsagePiece(u):
                usage += u.total
            case FinishPiece(reason):
                finish.append(reason)
    assert usage > 0
    assert finish == (["tool_calls"] if parts else ["stop"])
    calls = tuple(
        ToolCall(
            id=f"call_ours_{len(messages)}_{i}",
            wire_id=p["id"],
            name=p["name"],
            arguments=p["arguments"],
        )
        for i, p in sorted(parts.items())
    )
    return AssistantMessage(text="".join(text), tool_calls=calls)


def todos_of(message: AssistantMessage) -> list[tuple[str, str]]:
    (only,) = message.tool_calls
    assert only.name == "todo_write"
    args: dict[str, Any] = json.loads(only.arguments)
    assert set(args) == {"todos"}
    todos = [Todo.model_validate(t) for t in args["todos"]]
    return [(t.content, t.status) for t in todos]


async def test_the_demo_plans_works_through_and_answers(demo: OpenAIModel) -> None:
    assert demo.label == DEMO_LABEL == "demo model (offline)"
    messages: list[Message] = [QUESTION]
    statuses: list[list[str]] = []
    for _ in range(3):
        reply = await call(demo, messages)
        statuses.append([status for _, status in todos_of(reply)])
        result = ToolResult(
            call_id=reply.tool_calls[0].id, name="todo_write", content="Todo list saved."
        )
        messages += [reply, result]
    assert statuses == [
        ["in_progress", "pending", "pending"],
        ["completed", "in_progress", "pending"],
        ["completed", "completed", "completed"],
    ]
    assert all(isinstance(m, AssistantMessage) and m.text for m in messages[1::2])

    final = await call(demo, messages)
    assert final.tool_calls == ()
    assert final.text.startswith("## ")
    assert "\n- " in final.text and "```" in final.text
    assert "offline demo model" in final.text
    assert "OPENAI_API_KEY" in final.text and "OPENAI_BASE_URL" in final.text
    assert "Alice" in final.text
    assert "> How do I cut a release with the new pipeline?" in final.text


async def test_a_new_message_starts_a_new_plan(demo: OpenAIModel) -> None:
    first = await call(demo, [QUESTION])
    earlier: list[Message] = [
        QUESTION,
        first,
        ToolResult(call_id=first.tool_calls[0].id, name="todo_write", content="saved"),
        AssistantMessage(text="All done."),
        UserMessage(text="And a second thing?", author_name="Bob"),
    ]
    again = await call(demo, earlier)
    assert [s for _, s in todos_of(again)] == ["in_progress", "pending", "pending"]


async def test_without_tools_the_demo_only_answers(demo: OpenAIModel) -> None:
    final = await call(demo, [QUESTION], tools=())
    assert final.tool_calls == ()
    assert "offline demo model" in final.text


async def test_the_demo_streams_in_small_pieces(demo: OpenAIModel) -> None:
    pieces = [
        p async for p in demo.stream(ModelRequest("", [QUESTION], ())) if isinstance(p, TextPiece)
    ]
    assert len(pieces) > 10
    assert all(len(p.text.split()) <= 3 for p in pieces)


def test_the_step_comes_from_the_messages_after_the_last_user_message() -> None:
    tools = [{"type": "function", "function": {"name": "todo_write"}}]

    def body(*roles: str) -> dict[str, Any]:
        return {
            "messages": [
                {"role": r, "content": "[Ann]: hi" if r == "user" else "x"} for r in roles
            ],
            "tools": tools,
        }

    assert demo_turn(body("system", "user")).todos is not None
    assert demo_turn(body("user", "assistant", "tool", "assistant", "tool")).call_id == "call_demo3"
    assert (
        demo_turn(body("user", "assistant", "tool", "assistant", "tool", "assistant", "tool")).todos
        is None
    )
    assert demo_turn(body("user", "assistant", "tool", "user")).call_id == "call_demo1"
    assert demo_turn({"messages": []}).todos is None


async def test_the_transport_answers_only_streamed_chat_completions() -> None:
    async with httpx2.AsyncClient(transport=DemoTransport(chunk_delay_s=0)) as client:
        missing = await client.get("http://demo.invalid/v1/models")
        plain = await client.post("http://demo.invalid/v1/chat/completions", json={"messages": []})
        broken = await client.post("http://demo.invalid/v1/chat/completions", content=b"{nope")
        streamed = await client.post(
            "http://demo.invalid/v1/chat/completions",
            json={"stream": True, "messages": [{"role": "user", "content": "hi"}]},
        )
    assert missing.status_code == 404
    assert plain.status_code == 400 and "error" in plain.json()
    assert broken.status_code == 400
    assert streamed.status_code == 200
    assert streamed.headers["content-type"].startswith("text/event-stream")
    events = [line for line in streamed.text.split("\n\n") if line]
    assert events[-1] == "data: [DONE]"
    chunks = [json.loads(e.removeprefix("data: ")) for e in events[:-1]]
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
