"""The offline demo model: an HTTP transport that plays a small scripted agent.

It answers ``POST …/chat/completions`` with a real Server-Sent Events stream of
``chat.completion.chunk`` objects (a usage chunk, then ``data: [DONE]``), so the demo goes
through the same client, parsing and error handling as a real model. Nothing leaves the process.

The script is stateless: the step is the number of tool results after the last user message.

0. a short sentence, then ``todo_write`` with three items (the first in progress);
1. when the ``run_command`` tool is offered: a sentence, then a harmless ``run_command`` (it
   needs a person's approval, so a new user sees an approval card);
2. a sentence about the command's outcome, then ``todo_write`` marking the first completed and
   the second in progress;
3. ``todo_write`` marking every item completed;
4. a final Markdown answer: heading, list, a small code block, a quote of the user's message,
   and how to configure a real model.

A request without a ``todo_write`` tool (the engine's wrap-up call) gets the final answer.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2

DEMO_MODEL = "threadline-demo"
DEMO_LABEL = "demo model (offline)"
DEMO_BASE_URL = "http://demo.invalid/v1"
DEFAULT_CHUNK_DELAY_S = 0.03
WORDS_PER_CHUNK = 3
QUOTE_CHARS = 120
CREATED = 1_700_000_000

DEMO_COMMAND = "echo 'Hello from the Threadline workspace' && pwd"
TODO_ITEMS = (
    "Read the request",
    "Sketch the answer",
    "Write the reply",
)
_AUTHOR = re.compile(r"^\[([^\]\n]{1,80})\]: ")
_WORDS = re.compile(r"\S+\s*|\s+")


@dataclass(frozen=True, slots=True)
class DemoTurn:
    """What the demo model says on one call."""

    text: str
    todos: tuple[tuple[str, str], ...] | None = None
    """``(content, status)`` pairs for a ``todo_write`` call, or no call."""
    call_id: str = ""
    command: str | None = None
    """A ``run_command`` call instead of ``todo_write``."""

    @property
    def tool_call(self) -> tuple[str, str] | None:
        """``(name, JSON arguments)`` of the call this turn makes, if any."""
        if self.command is not None:
            return "run_command", json.dumps({"command": self.command, "timeout_s": 10})
        if self.todos is not None:
            return "todo_write", json.dumps({"todos": [{"content": c, "status": s} for c, s in self.todos]})
        return None


def demo_turn(body: dict[str, Any]) -> DemoTurn:
    """The scripted answer to a request body."""
    messages = [m for m in body.get("messages") or () if isinstance(m, dict)]
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    step = sum(1 for m in messages[last_user + 1 :] if m.get("role") == "tool")
    said = messages[last_user].get("content") if last_user >= 0 else ""
    author, text = _split_author(said if isinstance(said, str) else "")
    offered = _offered(body.get("tools"))
    if "todo_write" not in offered:
        return DemoTurn(_final_answer(author, text))
    plan = ["plan", "command", "outline", "done"] if "run_command" in offered else ["plan", "outline", "done"]
    if step >= len(plan):
        return DemoTurn(_final_answer(author, text))
    call_id = f"call_demo{step + 1}"
    match plan[step]:
        case "command":
            return DemoTurn(
                "Let me take a quick look at my workspace. Running a command needs your approval:",
                call_id=call_id,
                command=DEMO_COMMAND,
            )
        case "plan":
            said_now, statuses = "Let me plan this out first.", ("in_progress", "pending", "pending")
        case "outline":
            said_now = _after_command(messages[-1]) if plan[step - 1] == "command" else (
                "The request is clear; now the outline."
            )
            statuses = ("completed", "in_progress", "pending")
        case _:
            said_now, statuses = "Outline done; writing it up.", ("completed",) * 3
    return DemoTurn(said_now, tuple(zip(TODO_ITEMS, statuses, strict=True)), call_id)


def _after_command(result: dict[str, Any]) -> str:
    content = str(result.get("content") or "")
    if content.startswith(("denied", "expired")):
        return "No command then, that's fine. The request is clear; now the outline."
    return "The command ran in my own workspace directory. The request is clear; now the outline."


def _split_author(content: str) -> tuple[str | None, str]:
    match = _AUTHOR.match(content)
    if match is None:
        return None, content
    return match.group(1), content[match.end() :]


def _offered(tools: object) -> set[str]:
    """Names of the tools the request offers."""
    if not isinstance(tools, list):
        return set()
    names = set()
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.add(function["name"])
    return names


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) > QUOTE_CHARS:
        flat = flat[: QUOTE_CHARS - 1].rstrip() + "…"
    return flat or "(an empty message)"


def _final_answer(author: str | None, text: str) -> str:
    greeting = f"Thanks, {author}!" if author else "Thanks!"
    return (
        "## Demo answer\n\n"
        f"{greeting} You wrote:\n\n> {_quote(text)}\n\n"
        "I'm the **offline demo model**, so I can't really think about it, but here is what a "
        "run looks like:\n\n"
        "- the reply streams in as it is written\n"
        "- the plan lives in the pinned todo panel\n"
        "- tool calls run between model calls\n\n"
        "To use a real model, set `OPENAI_API_KEY` (OpenAI) or `OPENAI_BASE_URL` (any "
        "OpenAI-compatible server) and restart:\n\n"
        "```sh\n"
        "export OPENAI_API_KEY=sk-...\n"
        "# or, for a local server such as Ollama:\n"
        "export OPENAI_BASE_URL=http://localhost:11434/v1\n"
        "export THREADLINE_MODEL=llama3.1\n"
        "```\n"
    )


def _pieces(text: str) -> list[str]:
    words = _WORDS.findall(text)
    return ["".join(words[i : i + WORDS_PER_CHUNK]) for i in range(0, len(words), WORDS_PER_CHUNK)]


def demo_chunks(body: dict[str, Any], turn: DemoTurn, prompt_chars: int) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of one streamed answer."""
    model = str(body.get("model") or DEMO_MODEL)

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-demo-{turn.call_id or 'final'}",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks.extend(chunk({"content": piece}) for piece in _pieces(turn.text))
    arguments = ""
    if (call := turn.tool_call) is not None:
        name, arguments = call
        first = {"index": 0, "id": turn.call_id, "type": "function"}
        chunks.append(chunk({"tool_calls": [{**first, "function": {"name": name, "arguments": ""}}]}))
        half = len(arguments) // 2
        for part in (arguments[:half], arguments[half:]):
            chunks.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}))
    chunks.append(chunk({}, "stop" if call is None else "tool_calls"))
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = chunk({})
        usage["choices"] = []
        completion = (len(turn.text) + len(arguments)) // 4 + 1
        usage["usage"] = {
            "prompt_tokens": prompt_chars // 4,
            "completion_tokens": completion,
            "total_tokens": prompt_chars // 4 + completion,
            "prompt_tokens_details": {"cached_tokens": 0},
        }
        chunks.append(usage)
    return chunks


class _EventStream(httpx2.AsyncByteStream):
    def __init__(self, events: Sequence[bytes], delay_s: float) -> None:
        self._events = events
        self._delay_s = delay_s

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for number, event in enumerate(self._events):
            if number and self._delay_s > 0:
                await asyncio.sleep(self._delay_s)
            yield event


class DemoTransport(httpx2.AsyncBaseTransport):
    """Serves the demo model over an in-process HTTP transport; no network."""

    def __init__(self, *, chunk_delay_s: float = DEFAULT_CHUNK_DELAY_S) -> None:
        self._delay_s = chunk_delay_s

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
            return _error(request, 404, f"The demo model has no {request.url.path} endpoint.")
        raw = await request.aread()
        try:
            body = json.loads(raw)
        except ValueError:
            return _error(request, 400, "The request body is not JSON.")
        if not isinstance(body, dict) or not body.get("stream"):
            return _error(request, 400, "The demo model answers streamed requests only.")
        chunks = demo_chunks(body, demo_turn(body), len(raw))
        events = [f"data: {json.dumps(c)}\n\n".encode() for c in chunks]
        events.append(b"data: [DONE]\n\n")
        return httpx2.Response(
            200,
            headers={"content-type": "text/event-stream; charset=utf-8"},
            stream=_EventStream(events, self._delay_s),
            request=request,
        )


def _error(request: httpx2.Request, status: int, message: str) -> httpx2.Response:
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    return httpx2.Response(status, json={"error": error}, request=request)
