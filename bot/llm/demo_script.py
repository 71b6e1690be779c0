"""What the offline demo model says on each call: a short script, stateless and deterministic.

The demo reads the last user message (what was asked) and the tool results after it (how far
it got); what just happened is the last *user or tool* message, since the engine ends each
request with a system note (the todo list).

- Small talk ("Hello!", "thanks", "who are you?") gets a brief answer, no plan, no tool.
- A request to do something gets a plan (``todo_write``), one tool call, the plan brought up to
  date and a final answer that says once what happened: "run ls" runs that command
  (``run_command``, which asks a person first), "create a file called notes.md" writes it
  (``write_file``, in the thread's own workspace: nothing to approve). Any other request ("make
  a plan for a team lunch") is one the demo cannot do: it says so, and shows a command instead
  (``date``). A step that was denied, expired or failed is marked cancelled, never done.
- Files shared without a word are acknowledged by name.
- Anything else gets a Markdown answer saying it is the offline demo model and how to connect
  a real one. So does a request whose tool is not offered, or without ``todo_write``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.llm.demo_intent import Ask, Kind, understand
from bot.llm.wire import from_data

DEMO_COMMAND = "date"
"""What the demo runs for a request it cannot do: harmless, and it shows a command at work."""
OUTPUT_LINES = 6
NO_OUTPUT = "(no output)"
"""How ``run_command`` says a command printed nothing."""
ITEM_CHARS = 60
REQUEST_CHARS = 80
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
SCRIPT_ENDS = (
    "That's where my script ends: I'm the **offline demo model**. To use a real model, set "
    "`OPENAI_API_KEY` or `OPENAI_BASE_URL` and restart."
)
EXAMPLES = "“run ls”, “create a file called notes.md” or “make a plan for a team lunch”"
NOT_DONE = ("denied", "expired", "interrupted", "stopped", "error")
"""How the result of a call that did not do its work begins."""

Message = dict[str, Any]
Action = tuple[str, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class DemoReply:
    """What the demo model says on one call."""

    text: str
    todos: tuple[tuple[str, str], ...] | None = None
    """``(content, status)`` pairs for a ``todo_write`` call."""
    call_id: str = ""
    action: Action | None = None
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
    if ask.kind is Kind.FILES:
        return DemoReply(_files_only(ask))
    offered = _offered(body.get("tools"))
    action = _action(ask, offered) if ask.kind is not Kind.QUESTION else None
    if action is None or "todo_write" not in offered:
        return DemoReply(_cannot_answer(ask))
    turn = messages[last_user + 1 :]
    step = sum(1 for m in turn if m.get("role") == "tool")
    items = _items(ask, action)
    call_id = f"call_demo{step + 1}"
    match step:
        case 0:
            return DemoReply("", _plan(items, "completed", "in_progress", "pending"), call_id)
        case 1:
            return DemoReply(_before(ask, action), call_id=call_id, action=action)
        case 2:
            middle = "completed" if _worked(_acted(turn)) else "cancelled"
            return DemoReply("", _plan(items, "completed", middle, "completed"), call_id)
        case _:
            return DemoReply(f"{_outcome(action, _acted(turn))}\n\n{SCRIPT_ENDS}")


def _plan(items: tuple[str, str, str], *statuses: str) -> tuple[tuple[str, str], ...]:
    return tuple(zip(items, statuses, strict=True))


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


def _action(ask: Ask, offered: set[str]) -> Action | None:
    """The one tool call a request gets, when its tool is offered."""
    if ask.kind is Kind.WRITE_FILE:
        if "write_file" not in offered:
            return None
        content = f"Written by the Threadline demo model.\n\nAsked: {_quote(ask.text)}\n"
        return "write_file", {"path": ask.path or "notes.md", "content": content}
    if "run_command" in offered:
        return "run_command", {"command": ask.command or DEMO_COMMAND, "timeout_s": 10}
    return None


def _items(ask: Ask, action: Action) -> tuple[str, str, str]:
    match action:
        case ("write_file", {"path": path}):
            middle = f"Write {path} in my workspace"
        case ("run_command", _) if ask.command is not None:
            middle = f"Run `{_cut(ask.command, ITEM_CHARS)}` in my workspace"
        case _:
            middle = f"Show a command at work: `{DEMO_COMMAND}`"
    return ("Read the request", middle, "Say what happened")


def _before(ask: Ask, action: Action) -> str:
    """What the demo says as it makes its one call."""
    if action[0] == "write_file":
        return f"I'll write {action[1]['path']} in my workspace."
    asks_first = "Commands ask for your approval first."
    if ask.command is not None:
        return f"I'll run `{_cut(ask.command, ITEM_CHARS)}` in my workspace. {asks_first}"
    what = _cut(ask.request, REQUEST_CHARS) or "do that"
    return (
        f"I'm the offline demo model, so I can't {what} for real. I can show you a command "
        f"at work, though: `{DEMO_COMMAND}` prints today's date. {asks_first}"
    )


def _acted(turn: Sequence[Message]) -> Message | None:
    """The result of the one action of a request; ``turn`` is every message after the
    request. The call is found by name: the engine may give it another id on the wire than
    the demo chose."""
    ids = {
        call.get("id")
        for message in turn
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or ()
        if isinstance(call, dict) and (call.get("function") or {}).get("name") != "todo_write"
    }
    return next((m for m in turn if m.get("role") == "tool" and m.get("tool_call_id") in ids), None)


def _worked(result: Message | None) -> bool:
    return result is not None and not _text(result).startswith(NOT_DONE)


def _outcome(action: Action, result: Message | None) -> str:
    """What the one call did, said once, from its result."""
    content = _text(result) if result is not None else ""
    first = content.strip().splitlines()[0] if content.strip() else "(no result)"
    if content.startswith("denied"):
        return "You denied it, so nothing was run."
    if content.startswith("expired"):
        return "Nobody approved it in time, so nothing was run."
    if result is None or content.startswith(("interrupted", "stopped")):
        return "That call was cut off before it reported back, so I can't tell what it did."
    if content.startswith("error"):
        return f"That didn't work: {_cut(first, 200)}"
    if action[0] == "write_file":
        path = action[1]["path"]
        return f"{path} is in my workspace now. Ask me to run `cat {path}` to see it."
    status = _command_status(content)
    if status is None:
        return _cut(first, 200)
    lines = content.rstrip().split("\n")[:-1][:OUTPUT_LINES]
    if lines in ([], [NO_OUTPUT]):
        return f"The command ran in my workspace ({status}) and printed nothing."
    output = "\n".join(line.replace("```", "'''") for line in lines)
    return f"The command ran in my workspace ({status}) and printed:\n\n```\n{output}\n```"


def _command_status(content: str) -> str | None:
    """``exit code 0`` from a ``run_command`` result, if it is one."""
    last = content.rstrip().rsplit("\n", 1)[-1]
    if last.startswith("[") and last.endswith("]"):
        return last[1:-1]
    return None


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return _cut(flat, 120) or "(an empty message)"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _names(files: Sequence[str]) -> str:
    shown = [f"`{_cut(name, ITEM_CHARS)}`" for name in files[:5]]
    if len(files) > 5:
        shown.append(f"{len(files) - 5} more")
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def _kept(files: Sequence[str]) -> str:
    if not files:
        return ""
    it = "it" if len(files) == 1 else "them"
    return f"I've saved {_names(files)} in my workspace, but I can't read {it} for you. "


def _files_only(ask: Ask) -> str:
    thanks = f"Thanks, {ask.author}!" if ask.author else "Thanks!"
    return (
        f"{thanks} {_kept(ask.files)}I'm the **offline demo model**; a real model reads shared "
        "files with its tools and answers questions about them.\n\n" + REAL_MODEL
    )


def _cannot_answer(ask: Ask) -> str:
    greeting = f"Thanks, {ask.author}!" if ask.author else "Thanks!"
    said = f" You wrote:\n\n> {_quote(ask.text)}\n\n" if ask.text.strip() else " "
    return (
        f"{greeting}{said}{_kept(ask.files)}I'm the **offline demo model**, so I can't really "
        "answer that. I can show what a run looks like, though: ask me to do something, like "
        f"{EXAMPLES}.\n\n"
        "- the reply streams in as it is written\n"
        "- the plan is pinned at the top of the thread while work goes on\n"
        "- tool calls run between model calls, and commands ask for approval first\n\n" + REAL_MODEL
    )
