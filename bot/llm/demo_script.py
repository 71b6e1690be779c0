"""What the offline demo model says on each call: a short script, stateless and deterministic.

The demo reads the last user message (what was asked) and the tool results after it (how far
it got); what just happened is the last *user or tool* message, since the engine ends each
request with a system note (the todo list).

- Small talk ("Hello!", "thanks", "who are you?") gets a brief answer, no plan, no tool.
- A request to do something ("run ls", "create a file notes.txt", "make a plan to…") gets a
  plan (``todo_write``), one tool call when the tool is offered (``run_command``, which asks a
  person first, or ``write_file``), a sentence on that call's actual result, the plan marked
  done, and a final answer that reports what happened.
- Anything else gets a Markdown answer saying it is the offline demo model and how to connect
  a real one. So does a request without ``todo_write`` (the engine's wrap-up call).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.llm.demo_intent import Ask, Kind, understand
from bot.llm.wire import from_data

DEMO_COMMAND = "echo 'Hello from the Threadline workspace' && pwd"
QUOTE_CHARS = 120
OUTPUT_LINES = 6
ITEM_CHARS = 60
REAL_MODEL = (
    "To use a real model, set `OPENAI_API_KEY` (OpenAI) or `OPENAI_BASE_URL` (any "
    "OpenAI-compatible server) and restart:\n\n"
    "```sh\n"
    "export OPENAI_API_KEY=sk-...\n"
    "# or, for a local server such as Ollama:\n"
    "export OPENAI_BASE_URL=http://localhost:11434/v1\n"
    "export THREADLINE_MODEL=llama3.1\n"
    "```\n"
)
EXAMPLES = "“run ls”, “create a file called notes.md” or “make a plan for a team lunch”"

Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class DemoReply:
    """What the demo model says on one call."""

    text: str
    todos: tuple[tuple[str, str], ...] | None = None
    """``(content, status)`` pairs for a ``todo_write`` call."""
    call_id: str = ""
    action: tuple[str, dict[str, Any]] | None = None
    """Another tool call instead: ``(name, arguments)``."""

    @property
    def tool_call(self) -> tuple[str, str] | None:
        """``(name, JSON arguments)`` of the call this turn makes, if any."""
        if self.action is not None:
            return self.action[0], json.dumps(self.action[1])
        if self.todos is not None:
            todos = [{"content": c, "status": s} for c, s in self.todos]
            return "todo_write", json.dumps({"todos": todos})
        return None


def demo_reply(body: dict[str, Any]) -> DemoReply:
    """The scripted answer to a request body."""
    messages: list[Message] = [m for m in body.get("messages") or () if isinstance(m, dict)]
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    if last_user < 0:
        return DemoReply(_cannot_answer(Ask(None, "", Kind.QUESTION)))
    ask = understand(_text(messages[last_user]))
    if ask.small_talk:
        return DemoReply(small_talk(ask))
    offered = _offered(body.get("tools"))
    turn = messages[last_user + 1 :]
    results = [m for m in turn if m.get("role") == "tool"]
    if ask.kind is Kind.QUESTION or "todo_write" not in offered:
        return DemoReply(_final(ask, turn))
    action = _action(ask, offered)
    plan = ["plan", "act", "report", "done"] if action else ["plan", "report", "done"]
    step = len(results)
    if step >= len(plan):
        return DemoReply(_final(ask, turn))
    call_id = f"call_demo{step + 1}"
    items = _items(ask, action)
    match plan[step]:
        case "plan":
            text, statuses = "Let me plan this out first.", ("in_progress", "pending", "pending")
        case "act":
            return DemoReply(_before(action), call_id=call_id, action=action)
        case "report":
            text = _report(_last_spoken(messages)) if action else "The request is clear."
            statuses = ("completed", "in_progress", "pending")
        case _:
            text, statuses = "That's everything; writing it up.", ("completed",) * 3
    return DemoReply(text, tuple(zip(items, statuses, strict=True)), call_id)


def small_talk(ask: Ask) -> str:
    """A brief, friendly answer to small talk."""
    name = f", {ask.author}" if ask.author else ""
    match ask.kind:
        case Kind.GREETING:
            return (
                f"Hello{name}! 👋 I'm Threadline, running on the offline demo model. "
                f"Ask me to do something, like {EXAMPLES}, to see a plan and a tool at work."
            )
        case Kind.THANKS:
            return f"You're welcome{name}!"
        case Kind.HOW_ARE_YOU:
            return f"All good here, thanks{name}! What shall we do?"
        case Kind.BYE:
            return f"Bye{name}! This thread will be here when you come back."
        case Kind.IDENTITY:
            return (
                "I'm Threadline, an assistant that lives in chat threads. Right now I run on "
                "the **offline demo model**, which follows a short script: ask me to do "
                f"something, like {EXAMPLES}, to see plans, tools and approvals. "
                "To connect a real model, set `OPENAI_API_KEY` or `OPENAI_BASE_URL` and restart."
            )
        case _:
            return "👍"


def _text(message: Message) -> str:
    content = message.get("content")
    if not isinstance(content, str):
        return ""
    return from_data(content) if message.get("role") == "tool" else content


def _last_spoken(messages: Sequence[Message]) -> Message:
    """The last user or tool message: what just happened (system notes come after it)."""
    return next(m for m in reversed(messages) if m.get("role") in ("user", "tool"))


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


def _action(ask: Ask, offered: set[str]) -> tuple[str, dict[str, Any]] | None:
    """The one tool call a request gets, when its tool is offered."""
    if ask.kind is Kind.WRITE_FILE and "write_file" in offered:
        content = f"Written by the Threadline demo model.\n\nAsked: {_quote(ask.text)}\n"
        return "write_file", {"path": ask.path or "notes.md", "content": content}
    if "run_command" in offered:
        return "run_command", {"command": ask.command or DEMO_COMMAND, "timeout_s": 10}
    return None


def _items(ask: Ask, action: tuple[str, dict[str, Any]] | None) -> tuple[str, str, str]:
    match action:
        case ("write_file", {"path": path}):
            middle = f"Write {path}"
        case ("run_command", _) if ask.command is not None:
            middle = f"Run `{_cut(ask.command, ITEM_CHARS)}` in my workspace"
        case ("run_command", _):
            middle = "Look around my workspace"
        case _:
            middle = "Sketch the answer"
    return ("Read the request", middle, "Report what happened")


def _before(action: tuple[str, dict[str, Any]] | None) -> str:
    if action is not None and action[0] == "write_file":
        return f"Writing {action[1]['path']} in my workspace."
    return "Let me take a quick look at my workspace. Running a command needs your approval:"


def _report(result: Message) -> str:
    """One sentence on what the tool call actually did, from its result."""
    content = _text(result) if result.get("role") == "tool" else ""
    first = content.strip().splitlines()[0] if content.strip() else "(no result)"
    if content.startswith("denied"):
        return "You denied it, so nothing was run. That's fine."
    if content.startswith("expired"):
        return "Nobody approved it in time, so nothing was run."
    if content.startswith(("interrupted", "stopped")):
        return "That call was cut off before it reported back, so I can't tell what it did."
    if content.startswith("error"):
        return f"That didn't work: {_cut(first, 200)}"
    status = _command_status(content)
    if status is not None:
        return f"The command ran in my own workspace directory ({status})."
    return _cut(first, 200)


def _command_status(content: str) -> str | None:
    """``exit code 0`` from a ``run_command`` result, if it is one."""
    last = content.rstrip().rsplit("\n", 1)[-1]
    if last.startswith("[") and last.endswith("]"):
        return last[1:-1]
    return None


def _outcome(turn: Sequence[Message]) -> str:
    """What the one action of a request did, for the final answer; ``turn`` is every message
    after the request. The call is found by name: the engine may give it another id on the
    wire than the demo chose."""
    ids = {
        call.get("id")
        for message in turn
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or ()
        if isinstance(call, dict) and (call.get("function") or {}).get("name") != "todo_write"
    }
    act = next((m for m in turn if m.get("role") == "tool" and m.get("tool_call_id") in ids), None)
    if act is None:
        return ""
    content = _text(act)
    status = _command_status(content)
    if status is None or content.startswith(
        ("denied", "expired", "interrupted", "stopped", "error")
    ):
        return f"\n\n{_report(act)}\n"
    lines = content.rstrip().split("\n")[:-1][:OUTPUT_LINES]
    output = "\n".join(line.replace("```", "'''") for line in lines)
    return f"\n\n{_report(act)} It printed:\n\n```\n{output}\n```\n"


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return _cut(flat, QUOTE_CHARS) or "(an empty message)"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _final(ask: Ask, turn: Sequence[Message]) -> str:
    if ask.kind is Kind.QUESTION or not any(m.get("role") == "tool" for m in turn):
        return _cannot_answer(ask)
    greeting = f"Here is how it went, {ask.author}." if ask.author else "Here is how it went."
    return (
        "## Demo answer\n\n"
        f"{greeting} You asked:\n\n> {_quote(ask.text)}\n\n"
        "- the plan is in the pinned todo panel"
        f"{_outcome(turn)}\n"
        "I'm the **offline demo model**, so that is as far as my script goes. " + REAL_MODEL
    )


def _cannot_answer(ask: Ask) -> str:
    greeting = f"Thanks, {ask.author}!" if ask.author else "Thanks!"
    return (
        "## Demo answer\n\n"
        f"{greeting} You wrote:\n\n> {_quote(ask.text)}\n\n"
        "I'm the **offline demo model**, so I can't really answer that. I can show what a run "
        f"looks like, though: ask me to do something, like {EXAMPLES}.\n\n"
        "- the reply streams in as it is written\n"
        "- the plan lives in the pinned todo panel\n"
        "- tool calls run between model calls, and the ones with side effects ask first\n\n"
        + REAL_MODEL
    )
