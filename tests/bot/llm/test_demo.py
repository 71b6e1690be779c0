"""The offline demo model, through the real client and ``build_openai_model``."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from bot.api.inbound import Author, Inbound, ThreadKey
from bot.config import Settings
from bot.core import Core
from bot.infra.clock import ManualClock
from bot.llm.demo import DEMO_LABEL, DemoTransport, demo_reply
from bot.llm.demo_intent import Kind, understand
from bot.llm.demo_script import SCRIPT_ENDS, small_talk
from bot.llm.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
)
from bot.llm.model import FinishPiece, ModelRequest, TextPiece, ToolCallPiece, ToolSpec, UsagePiece
from bot.llm.openai_model import OpenAIModel, build_openai_model
from bot.sessions.model import Todo
from bot.storage.sqlite.store import SqliteStore
from bot.tools.builtin import builtin_tools
from bot.tools.registry import ToolRegistry
from tests.fakes.surface import RecordingSurface, drive

TODO = ToolSpec("todo_write", "Replace the todo list.", {"type": "object", "properties": {}})
KEY = ThreadKey("test:demo")
ALICE = Author(id="test:U1", display_name="Alice")
RUN = ToolSpec("run_command", "Run a command.", {"type": "object", "properties": {}})
WRITE = ToolSpec("write_file", "Write a file.", {"type": "object", "properties": {}})
QUESTION = UserMessage(
    text="How do I cut a release\nwith the new pipeline?", author_id="U1", author_name="Alice"
)
TASK = UserMessage(text="Plan the release of the new pipeline", author_id="U1", author_name="Alice")


def todo_note() -> SystemMessage:
    return SystemMessage(text="Current todo list:\n1. [in_progress] Read the request")


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
    """A request it cannot do: it says so plainly, shows ``date`` at work, and reports once."""
    assert demo.label == DEMO_LABEL == "demo model (offline)"
    messages: list[Message] = [TASK]
    plan = await call(demo, messages, (TODO, RUN))
    assert todos_of(plan) == [
        ("Read the request", "completed"),
        ("Show a command at work: `date`", "in_progress"),
        ("Say what happened", "pending"),
    ]
    messages += [plan, ToolResult(call_id=plan.tool_calls[0].id, name="todo_write", content="ok")]
    act = await call(demo, messages, (TODO, RUN))
    (command,) = act.tool_calls
    assert json.loads(command.arguments)["command"] == "date"
    assert act.text.startswith(
        "I'm the offline demo model, so I can't plan the release of the new pipeline for real."
    )
    output = "Sat Nov 28 07:00:00 UTC 2026\n[exit code 0]"
    messages += [act, ToolResult(call_id=command.id, name="run_command", content=output)]
    done = await call(demo, [*messages, todo_note()], (TODO, RUN))
    assert [s for _, s in todos_of(done)] == ["completed"] * 3 and done.text == ""
    messages += [done, ToolResult(call_id=done.tool_calls[0].id, name="todo_write", content="ok")]
    final = await call(demo, [*messages, todo_note()], (TODO, RUN))
    assert final.tool_calls == ()
    assert final.text == (
        "The command ran in my workspace (exit code 0) and printed:\n\n"
        "```\nSat Nov 28 07:00:00 UTC 2026\n```\n\n" + SCRIPT_ENDS
    )
    assert "OPENAI_API_KEY" in final.text and "OPENAI_BASE_URL" in final.text


async def test_a_question_it_cannot_answer_says_so_and_how_to_connect_a_model(
    demo: OpenAIModel,
) -> None:
    answer = await call(demo, [QUESTION], tools=(TODO, RUN))
    assert answer.tool_calls == ()
    assert "offline demo model" in answer.text and "can't really answer" in answer.text
    assert "OPENAI_API_KEY" in answer.text and "OPENAI_BASE_URL" in answer.text
    assert answer.text.startswith(
        "Thanks, Alice! You wrote:\n\n> How do I cut a release with the new pipeline?\n\n"
        "I'm the **offline demo model**"
    )


async def test_files_shared_are_named_in_plain_words(demo: OpenAIModel) -> None:
    note = (
        "Shared 3 files (saved in your workspace: use read_file):\n"
        "- cities.csv (59 bytes, text, 4 lines). Start:\n```\nname,people\n```\n"
        "- photo.png (2.0 KB, image, 10×10): saved\n"
        "- huge.bin: not downloaded (9.0 MB, larger than the 8.0 MB cap)"
    )
    alone = await call(demo, [UserMessage(text=note, author_name="Alice")], (TODO, RUN))
    assert alone.text.startswith(
        "Thanks, Alice! I've saved `cities.csv` and `photo.png` in my workspace, but I can't "
        "read them for you. I'm the **offline demo model**"
    )
    asked = UserMessage(text=f"Which is largest?\n\n{note}", author_name="Alice")
    answer = await call(demo, [asked], (TODO, RUN))
    assert "Shared" not in answer.text and "read_file" not in answer.text
    assert "`cities.csv` and `photo.png`" in answer.text and "can't really answer" in answer.text


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("Hello!", "Hello, Alice!"),
        ("hi there", "Hello, Alice!"),
        ("thanks", "You're welcome, Alice!"),
        ("Thank you so much!", "You're welcome, Alice!"),
        ("who are you?", "offline demo model"),
        ("How are you?", "All good here"),
        ("bye", "Bye, Alice!"),
    ],
)
async def test_small_talk_gets_a_brief_answer_without_plan_or_tool(
    demo: OpenAIModel, said: str, expected: str
) -> None:
    answer = await call(demo, [UserMessage(text=said, author_name="Alice")], tools=(TODO, RUN))
    assert answer.tool_calls == ()
    assert expected in answer.text
    assert len(answer.text) < 400 and "##" not in answer.text


async def test_asked_who_it_is_it_says_how_to_connect_a_real_model(demo: OpenAIModel) -> None:
    answer = await call(demo, [UserMessage(text="Who are you?")], tools=(TODO, RUN))
    assert "OPENAI_API_KEY" in answer.text and "run ls" in answer.text


async def run_until_the_command(
    demo: OpenAIModel, said: str, tools: tuple[ToolSpec, ...] = (TODO, RUN)
) -> tuple[list[Message], ToolCall]:
    """The demo's plan for ``said`` (saved), then its next call."""
    messages: list[Message] = [UserMessage(text=said, author_name="Alice")]
    plan = await call(demo, messages, tools)
    assert [s for _, s in todos_of(plan)] == ["completed", "in_progress", "pending"]
    messages += [plan, ToolResult(call_id=plan.tool_calls[0].id, name="todo_write", content="ok")]
    act = await call(demo, messages, tools)
    (only,) = act.tool_calls
    return [*messages, act], only


async def finish(
    demo: OpenAIModel, messages: list[Message], result: ToolResult
) -> tuple[AssistantMessage, AssistantMessage]:
    """The demo's plan brought up to date after ``result``, and its final answer."""
    messages = [*messages, result]
    # the engine ends every request with a system note (the todo list), after the result
    done = await call(demo, [*messages, todo_note()], (TODO, RUN))
    messages += [done, ToolResult(call_id=done.tool_calls[0].id, name="todo_write", content="ok")]
    final = await call(demo, [*messages, todo_note()], (TODO, RUN))
    assert final.tool_calls == ()
    return done, final


async def test_asked_to_run_a_command_it_plans_and_runs_that_command(demo: OpenAIModel) -> None:
    messages, command = await run_until_the_command(demo, "Hello! Can you run `ls -la`?")
    assert command.name == "run_command"
    assert json.loads(command.arguments)["command"] == "ls -la"
    assert messages[-1].text == (
        "I'll run `ls -la` in my workspace. Commands ask for your approval first."
    )
    output = "total 0\ndrwxr-xr-x 2 bot bot 40 .\n[exit code 0]"
    done, final = await finish(
        demo, messages, ToolResult(call_id=command.id, name="run_command", content=output)
    )
    assert [s for _, s in todos_of(done)] == ["completed"] * 3
    assert final.text.startswith(
        "The command ran in my workspace (exit code 0) and printed:\n\n"
        "```\ntotal 0\ndrwxr-xr-x 2 bot bot 40 .\n```"
    )


@pytest.mark.parametrize(
    ("result", "said"),
    [
        ("denied by Bob: the call was not run.", "You denied it, so nothing was run."),
        (
            "expired: nobody approved the call in time, so it was not run.",
            "Nobody approved it in time, so nothing was run.",
        ),
        (
            "interrupted: the run stopped before this tool reported back; its outcome is unknown.",
            "That call was cut off before it reported back, so I can't tell what it did.",
        ),
        (
            "error: the command could not start",
            "That didn't work: error: the command could not start",
        ),
    ],
)
async def test_a_step_not_done_is_cancelled_and_said_once(
    demo: OpenAIModel, result: str, said: str
) -> None:
    messages, command = await run_until_the_command(demo, "run pwd")
    done, final = await finish(
        demo, messages, ToolResult(call_id=command.id, name="run_command", content=result)
    )
    assert [s for _, s in todos_of(done)] == ["completed", "cancelled", "completed"]
    assert final.text == f"{said}\n\n{SCRIPT_ENDS}"


async def test_asked_to_create_a_file_it_writes_that_file(demo: OpenAIModel) -> None:
    _, write = await run_until_the_command(
        demo, "create a file called ideas.md", (TODO, RUN, WRITE)
    )
    assert write.name == "write_file"
    arguments = json.loads(write.arguments)
    assert (
        arguments["path"] == "ideas.md" and "create a file called ideas.md" in arguments["content"]
    )


async def test_a_request_without_its_tool_gets_a_plain_answer(demo: OpenAIModel) -> None:
    first = await call(demo, [TASK])
    assert first.tool_calls == () and "can't really answer" in first.text
    no_write = await call(demo, [UserMessage(text="create a file called a.md")], (TODO, RUN))
    assert no_write.tool_calls == () and "can't really answer" in no_write.text


async def test_a_new_message_starts_a_new_plan(demo: OpenAIModel) -> None:
    first = await call(demo, [TASK], (TODO, RUN))
    earlier: list[Message] = [
        TASK,
        first,
        ToolResult(call_id=first.tool_calls[0].id, name="todo_write", content="saved"),
        AssistantMessage(text="All done."),
        UserMessage(text="And make a second plan, please", author_name="Bob"),
    ]
    again = await call(demo, earlier, (TODO, RUN))
    assert [s for _, s in todos_of(again)] == ["completed", "in_progress", "pending"]


async def test_without_tools_the_demo_only_answers(demo: OpenAIModel) -> None:
    final = await call(demo, [TASK], tools=())
    assert final.tool_calls == ()
    assert "offline demo model" in final.text


async def test_the_demo_streams_in_small_pieces(demo: OpenAIModel) -> None:
    pieces = [
        p async for p in demo.stream(ModelRequest("", [QUESTION], ())) if isinstance(p, TextPiece)
    ]
    assert len(pieces) > 10
    assert all(len(p.text.split()) <= 3 for p in pieces)


def test_the_step_comes_from_the_messages_after_the_last_user_message() -> None:
    tools = [{"type": "function", "function": {"name": n}} for n in ("todo_write", "run_command")]

    def body(*roles: str) -> dict[str, Any]:
        return {
            "messages": [
                {"role": r, "content": "[Ann]: make a plan" if r == "user" else "x"} for r in roles
            ],
            "tools": tools,
        }

    assert demo_reply(body("system", "user")).todos is not None
    assert (
        demo_reply(body("user", "assistant", "tool", "assistant", "tool")).call_id == "call_demo3"
    )
    assert (
        demo_reply(
            body("user", "assistant", "tool", "assistant", "tool", "assistant", "tool")
        ).todos
        is None
    )
    assert demo_reply(body("user", "assistant", "tool", "user")).call_id == "call_demo1"
    assert demo_reply({"messages": []}).todos is None


@pytest.mark.parametrize(
    ("said", "kind", "command"),
    [
        ("Hello!", Kind.GREETING, None),
        ("good morning everyone", Kind.GREETING, None),
        ("👍", Kind.ACK, None),
        ("Thanks! Now make it a surprise", Kind.TASK, None),
        ("run ls", Kind.RUN, "ls"),
        ("Hello, please run ls -la.", Kind.RUN, "ls -la"),
        ("execute `du -sh .` in the shell", Kind.RUN, "du -sh ."),
        ("pwd", Kind.RUN, "pwd"),
        ("please run the tests", Kind.TASK, None),
        ("make a plan to move the office", Kind.TASK, None),
        ("OK so Make a plan", Kind.TASK, None),
        ("How do I cut a release?", Kind.QUESTION, None),
        ("What's the weather like?", Kind.QUESTION, None),
        ("", Kind.ACK, None),
    ],
)
def test_what_the_demo_makes_of_a_message(said: str, kind: Kind, command: str | None) -> None:
    ask = understand(f"[Ann]: {said}")
    assert (ask.author, ask.kind, ask.command) == ("Ann", kind, command)


def test_a_file_name_is_taken_from_the_request_and_kept_in_the_workspace() -> None:
    assert understand("create a file named plan.txt").path == "plan.txt"
    assert understand("write a file with my ideas").path == "notes.md"
    assert understand("create a file called ../../etc/passwd").path == "notes.md"


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


class DemoThread:
    """The real core on the demo model and the workspace tools, in a recording thread."""

    def __init__(self, tmp_path: Path) -> None:
        self.clock = ManualClock(start=1_000_000.0)
        self.settings = Settings(_env_file=None, data_dir=tmp_path)
        model = build_openai_model(
            self.settings, self.clock, rng=random.Random(0), demo_chunk_delay_s=0
        )
        store = SqliteStore(self.settings.database_path)
        tools = ToolRegistry(builtin_tools(self.settings))
        self.core = Core(self.settings, store, model, tools, self.clock)
        self.surface = RecordingSurface(self.clock, thread_key=KEY)
        self.core.register_surfaces("test:", lambda key: self.surface)

    async def say(self, words: str) -> None:
        inbound = Inbound(KEY, ALICE, words, f"ev-{len(words)}-{words[:8]}")
        await drive(self.clock, self.core.handle(inbound, self.surface))

    async def click(self, label: str) -> None:
        card = next(m for m in self.surface.live() if any(b.label == label for b in m.buttons))
        button = next(b for b in card.buttons if b.label == label)
        await drive(self.clock, self.core.on_action(button.action_id, ALICE, self.surface, card.id))
        await drive(self.clock, self.core.wait_idle())


@pytest.fixture
async def thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[DemoThread]:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "THREADLINE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    world = DemoThread(tmp_path)
    await world.core.start()
    yield world
    await world.core.aclose()


async def test_through_the_engine_deny_is_reported_as_denied(thread: DemoThread) -> None:
    await thread.say("run pwd")
    assert any("`run_command`" in m.text for m in thread.surface.live())
    await thread.click("Deny")
    shown = thread.surface.visible_text()
    assert shown.count("nothing was run") == 1 and SCRIPT_ENDS in shown
    assert "command ran" not in shown and "printed" not in shown
    assert "3/3 done" not in shown and "2/3 done, 1 cancelled" in shown
    session = await thread.core.store.load_session(KEY, thread.clock.now())
    result = next(
        m for m in session.messages if isinstance(m, ToolResult) and m.name == "run_command"
    )
    assert result.content.startswith("denied")


async def test_through_the_engine_expiry_is_reported_as_expired(thread: DemoThread) -> None:
    await thread.say("run pwd")
    await thread.clock.advance(thread.settings.approval_ttl_s + 1)
    assert await thread.core.scheduler.run_due() >= 1
    await drive(thread.clock, thread.core.wait_idle())
    shown = thread.surface.visible_text()
    assert "Nobody approved it in time" in shown and "command ran" not in shown


async def test_through_the_engine_small_talk_uses_no_tool(thread: DemoThread) -> None:
    await thread.say("Hello!")
    assert thread.surface.texts() == [small_talk(understand("[Alice]: Hello!"))]
    assert thread.surface.pinned_ids == []
    session = await thread.core.store.load_session(KEY, thread.clock.now())
    assert [type(m) for m in session.messages] == [UserMessage, AssistantMessage]


async def test_through_the_engine_each_request_reports_its_own_command(thread: DemoThread) -> None:
    # the demo's tool-call ids repeat from one request to the next; the engine renames them
    for word in ("first-run", "second-run"):
        await thread.say(f"run echo {word}")
        await thread.click("Approve")
        final = thread.surface.texts()[-1]
        assert final.endswith(SCRIPT_ENDS) and f"printed:\n\n```\n{word}\n```" in final
