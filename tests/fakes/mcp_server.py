"""A fake MCP server speaking raw JSON-RPC, for tests and benchmarks.

Two transports share one :class:`Behaviour`:

* stdio: run ``python tests/fakes/mcp_server.py [options]`` (:func:`stdio_command`); one
  JSON-RPC message a line on stdin and stdout, as the MCP stdio transport has it. The script
  imports nothing from the project, so it runs with the minimal environment servers get;
* streamable HTTP: :class:`tests.fakes.mcp_http.FakeMcpHttp`, in the test's own event loop.

Its tools (the ``basic`` catalog) can answer, fail (``isError``), answer with a JSON-RPC error,
hang, crash the process, return 50 MB, send a line that is not JSON followed by a malformed
result, change the tool list (and notify), and report their environment. The ``weird`` catalog
lists names and schemas a model API would reject; the ``hints`` catalog, tools whose annotations
and ``execution`` matter (open world, read-only, task-only). Start-up options make it hang in
``initialize`` or exit before answering anything.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HUGE_CHARS = 50 * 1024 * 1024

_ID = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
_NONE: dict[str, Any] = {"type": "object", "properties": {}}
_READ = {"readOnlyHint": True}


def _tool(
    name: str, description: str, schema: dict[str, Any], annotations: dict[str, Any] | None = None
) -> dict[str, Any]:
    found: dict[str, Any] = {"name": name, "description": description, "inputSchema": schema}
    if annotations is not None:
        found["annotations"] = annotations
    return found


BASIC = [
    _tool("lookup", "Look a ticket up by id.", _ID, _READ),
    _tool("close_ticket", "Close a ticket.", _ID, {"readOnlyHint": False, "destructiveHint": True}),
    _tool(
        "echo",
        "Say the text back.",
        {"type": "object", "properties": {"text": {"type": "string"}}},
        _READ,
    ),
    _tool("fail", "Always fails (isError).", _NONE, _READ),
    _tool("rpc_error", "Answers with a JSON-RPC error.", _NONE, _READ),
    _tool("hang", "Never answers.", _NONE, _READ),
    _tool("crash", "Kills the server.", _NONE, _READ),
    _tool("huge", "Answers with 50 MB of text.", _NONE, _READ),
    _tool("malformed", "Sends a line that is not JSON, then a malformed result.", _NONE, _READ),
    _tool("change_tools", "Adds the tool `added` and notifies.", _NONE, _READ),
    _tool("env", "Lists the names in the server's environment.", _NONE, _READ),
    _tool(
        "stderr",
        "Writes a line to stderr.",
        {"type": "object", "properties": {"text": {"type": "string"}}},
        _READ,
    ),
]
ADDED = _tool("added", "Appeared after change_tools.", _NONE, _READ)

_NESTED = {
    "type": "object",
    "properties": {"filter": {"$ref": "#/$defs/Filter"}},
    "$defs": {
        "Filter": {
            "type": "object",
            "properties": {
                "status": {"$ref": "#/$defs/Status"},
                "owner": {"$ref": "#/$defs/Person"},
            },
        },
        "Status": {"type": "string", "enum": ["open", "closed"]},
        "Person": {"type": "object", "properties": {"name": {"type": "string"}}},
    },
}
_RECURSIVE = {
    "type": "object",
    "properties": {"node": {"$ref": "#/definitions/Node"}},
    "definitions": {
        "Node": {
            "type": "object",
            "properties": {
                "label": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/definitions/Node"}},
            },
        }
    },
}

WEIRD = [
    _tool("get ticket!", "A name with a space and a bang.", _ID, _READ),
    _tool("look.up", "Sanitises to look_up.", _ID, _READ),
    _tool("look_up", "Already look_up.", _ID, _READ),
    _tool("x" * 80, "A name far too long.", _NONE, _READ),
    _tool("search", "Nested $refs in $defs.", _NESTED, _READ),
    _tool("tree", "A recursive $ref.", _RECURSIVE, _READ),
    _tool("untyped", "No type at the top.", {"properties": {"q": {"type": "string"}}}, _READ),
    _tool(
        "tags",
        "An array without items.",
        {"type": "object", "properties": {"tags": {"type": "array"}}},
        _READ,
    ),
    _tool("scalar", "A schema that is not an object.", {"type": "string"}, _READ),
    _tool(
        "remote_ref",
        "A $ref outside the schema.",
        {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}},
        _READ,
    ),
]


HINTS = [
    _tool(
        "fetch",
        "Fetch a URL (as mcp-server-fetch describes its tool).",
        {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
        {"readOnlyHint": True, "openWorldHint": True},
    ),
    _tool("lookup", "Look a ticket up by id.", _ID, {"readOnlyHint": True, "openWorldHint": False}),
    {
        **_tool("long_job", "Runs for hours: a task only.", _NONE, _READ),
        "execution": {"taskSupport": "required"},
    },
    {
        **_tool("maybe_task", "May run as a task.", _NONE, _READ),
        "execution": {"taskSupport": "optional"},
    },
]
"""Tools whose annotations and execution say how far they reach, and how they may be called."""

SLOW = [
    _tool(
        "reindex",
        "Reports its progress (`steps` notifications, when given a progress token), then answers.",
        {"type": "object", "properties": {"steps": {"type": "integer"}}},
        _READ,
    ),
    _tool("hang", "Never answers (until it is cancelled).", _NONE, _READ),
    _tool(
        "flood",
        "Sends `count` progress and `count` log notifications, then answers.",
        {"type": "object", "properties": {"count": {"type": "integer"}}},
        _READ,
    ),
]
"""Tools that take their time: progress notifications (a flood of them), and a call that only
ends cancelled."""


def _task_tool(name: str, description: str, support: str = "required") -> dict[str, Any]:
    return {**_tool(name, description, _TOPIC, _READ), "execution": {"taskSupport": support}}


_TOPIC = {"type": "object", "properties": {"topic": {"type": "string"}}}
TASKS = [
    _task_tool("research", "Reads three sources (one a poll), then answers: a task only."),
    _task_tool("stuck", "A task that works until it is cancelled."),
    _task_tool("broken_job", "A task that fails."),
    _task_tool("announced", "A task whose end the server announces (its poll interval: 10 min)."),
    _task_tool("confirm_job", "A task that asks for a confirmation (a form) first."),
    _task_tool("maybe_task", "May run as a task; answers at once when called plainly.", "optional"),
]
"""Tools called as tasks (MCP 2025-11-25); the server declares task-augmented calls."""


@dataclass
class FakeTask:
    ident: str
    tool: str
    topic: str
    status: str = "working"
    message: str = "started"
    polls: int = 0
    waiting: Any = None
    """The id of a ``tasks/result`` held open until the form is answered."""
    answer: str = ""
    poll_ms: int = 100

    def wire(self) -> dict[str, Any]:
        return {
            "taskId": self.ident,
            "status": self.status,
            "statusMessage": self.message,
            "createdAt": "2026-01-01T00:00:00Z",
            "lastUpdatedAt": "2026-01-01T00:00:00Z",
            "ttl": 3_600_000,
            "pollInterval": self.poll_ms,
        }


def many(count: int) -> list[dict[str, Any]]:
    return [_tool(f"tool_{i}", f"Trivial tool {i}.", _ID, _READ) for i in range(count)]


@dataclass
class Reply:
    """What the server does with one incoming message."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    raw_lines: list[str] = field(default_factory=list)
    """Written before ``messages`` (the stdio transport only)."""
    crash: bool = False


@dataclass
class Behaviour:
    catalog: list[dict[str, Any]]
    hang_initialize: bool = False
    effects: Path | None = None
    """``close_ticket`` appends ``closed <id>`` here (what the tool did, for tests to read)."""
    stderr: Callable[[str], None] = lambda line: None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    """Every notification the client sent (``initialized``, ``cancelled``…), in order."""
    task_capable: bool = False
    """It declares task-augmented ``tools/call`` (and ``tasks/cancel``)."""
    tasks: dict[str, FakeTask] = field(default_factory=dict)
    methods: list[str] = field(default_factory=list)
    """Every request's method, in order."""

    def handle(self, message: dict[str, Any]) -> Reply:
        method = message.get("method")
        if method is None and "id" in message:
            return self._answered(message)
        if "id" in message:
            self.methods.append(str(method))
        if "id" not in message:
            self.notes.append(message)
            if self.effects is not None and method == "notifications/cancelled":
                with self.effects.open("a") as out:
                    out.write(f"cancelled {message.get('params', {}).get('requestId')}\n")
            return Reply()  # a notification (initialized, cancelled)
        ident = message["id"]
        params = message.get("params") or {}
        match method:
            case "initialize":
                if self.hang_initialize:
                    return Reply()
                version = params.get("protocolVersion", "2025-06-18")
                return _result(
                    ident,
                    {
                        "protocolVersion": version,
                        "capabilities": {
                            "tools": {"listChanged": True},
                            **(
                                {"tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}}
                                if self.task_capable
                                else {}
                            ),
                        },
                        "serverInfo": {"name": "fake-tickets", "version": "1.0"},
                    },
                )
            case "ping":
                return _result(ident, {})
            case "tools/list":
                return _result(ident, {"tools": self.catalog})
            case "tools/call":
                return self._tools_call(ident, params)
            case "tasks/get" | "tasks/result" | "tasks/cancel":
                task = self.tasks.get(str(params.get("taskId")))
                if task is None:
                    return _error(ident, -32602, "Failed to retrieve task: Task not found")
                return self._task(ident, method, task)
        return Reply(
            [
                {
                    "jsonrpc": "2.0",
                    "id": ident,
                    "error": {"code": -32601, "message": f"no method {method}"},
                }
            ]
        )

    def _tools_call(self, ident: Any, params: dict[str, Any]) -> Reply:
        name, args = str(params.get("name")), params.get("arguments") or {}
        if name == "reindex":
            return _reindex(ident, args, (params.get("_meta") or {}).get("progressToken"))
        if name == "flood":
            return _flood(ident, args, (params.get("_meta") or {}).get("progressToken"))
        if "task" in params and self.task_capable:
            return self._create(ident, name, args)
        if name in {t["name"] for t in TASKS if t["execution"]["taskSupport"] == "required"}:
            return _error(ident, -32601, f"{name} can only be called as a task")
        return self._call(ident, name, args)

    def _create(self, ident: Any, name: str, args: dict[str, Any]) -> Reply:
        self.calls.append((name, args))
        task_id = f"task-{len(self.tasks) + 1}"
        task = FakeTask(task_id, name, str(args.get("topic", "")), message=f"{name} started")
        self.tasks[task.ident] = task
        reply = _result(ident, {"task": task.wire()})
        if name == "announced":
            task.poll_ms = 600_000
            task.status, task.message, task.answer = "completed", "announced", "announced done"
            note = {"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": task.wire()}
            reply.messages.append(note)
        return reply

    def _task(self, ident: Any, method: str, task: FakeTask) -> Reply:
        terminal = task.status in {"completed", "failed", "cancelled"}
        if method == "tasks/cancel":
            if terminal:
                return _error(ident, -32602, "the task is over")
            task.status, task.message = "cancelled", "cancelled on request"
            if self.effects is not None:
                with self.effects.open("a") as out:
                    out.write(f"task cancelled {task.ident}\n")
            return _result(ident, task.wire())
        if method == "tasks/result":
            if task.status == "input_required":
                task.waiting = ident
                return Reply([_confirm_form(task)])
            if task.status == "failed":
                return _text(ident, task.message, error=True)
            return _text(ident, task.answer) if terminal else Reply()
        if not terminal and task.status != "input_required":
            self._advance(task)
        return _result(ident, task.wire())

    @staticmethod
    def _advance(task: FakeTask) -> None:
        task.polls += 1
        match task.tool:
            case "research" if task.polls <= 3:
                task.message = f"reading source {task.polls} of 3"
            case "research":
                task.status, task.message = "completed", "done"
                task.answer = f"research on {task.topic}: 3 sources agree"
            case "stuck":
                task.message = "still digging"
            case "broken_job":
                task.status, task.message = "failed", "the index is gone"
            case "confirm_job":
                task.status, task.message = "input_required", "waiting for a confirmation"

    def _answered(self, message: dict[str, Any]) -> Reply:
        """The client's answer to the form a task asked for: the held ``tasks/result`` ends."""
        task = next((t for t in self.tasks.values() if f"ask-{t.ident}" == message["id"]), None)
        if task is None or task.waiting is None:
            return Reply()
        answer = message.get("result") or {}
        task.status, task.message = "completed", "confirmed"
        task.answer = f"confirm_job: {answer.get('action')} {json.dumps(answer.get('content'))}"
        held, task.waiting = task.waiting, None
        return _text(held, task.answer)

    def _call(self, ident: Any, name: str, args: dict[str, Any]) -> Reply:  # noqa: C901 (one case a tool)
        self.calls.append((name, args))
        if name not in {t["name"] for t in self.catalog}:
            return _text(ident, f"unknown tool {name}", error=True)
        match name:
            case "lookup":
                return _text(ident, f"{args.get('id')}: printer on fire (open)")
            case "close_ticket":
                if self.effects is not None:
                    with self.effects.open("a") as out:
                        out.write(f"closed {args.get('id')}\n")
                return _text(ident, f"closed {args.get('id')}")
            case "echo":
                return _text(ident, str(args.get("text", "")))
            case "fail":
                return _text(ident, "the ticket store is read-only today", error=True)
            case "rpc_error":
                return Reply(
                    [
                        {
                            "jsonrpc": "2.0",
                            "id": ident,
                            "error": {"code": -32603, "message": "database exploded"},
                        }
                    ]
                )
            case "hang":
                return Reply()
            case "crash":
                self.stderr("crashing on purpose")
                return Reply(crash=True)
            case "huge":
                return _text(ident, "y" * HUGE_CHARS)
            case "malformed":
                bad = {"jsonrpc": "2.0", "id": ident, "result": {"content": "not a list"}}
                return Reply([bad], raw_lines=["this line is not JSON-RPC {"])
            case "change_tools":
                if ADDED not in self.catalog:
                    self.catalog.append(ADDED)
                note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
                return Reply([*_text(ident, "added a tool").messages, note])
            case "env":
                return _text(ident, json.dumps(sorted(os.environ)))
            case "stderr":
                self.stderr(str(args.get("text", "")))
                return _text(ident, "written")
        return _text(ident, f"{name} done")


def _reindex(ident: Any, args: dict[str, Any], token: Any) -> Reply:
    steps = int(args.get("steps", 3))
    notes = [
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {
                "progressToken": token,
                "progress": i,
                "total": steps,
                "message": f"step {i}",
            },
        }
        for i in range(1, steps + 1)
        if token is not None
    ]
    answer = f"reindexed in {steps} steps" + ("" if token is not None else " (no progress token)")
    return Reply([*notes, *_text(ident, answer).messages])


def _flood(ident: Any, args: dict[str, Any], token: Any) -> Reply:
    count = int(args.get("count", 1000))
    notes: list[dict[str, Any]] = []
    for i in range(1, count + 1):
        if token is not None:
            params = {"progressToken": token, "progress": i, "total": count, "message": f"row {i}"}
            notes.append({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
        log = {"level": "info", "logger": "flood", "data": f"row {i} read"}
        notes.append({"jsonrpc": "2.0", "method": "notifications/message", "params": log})
    return Reply(
        [*notes, *_text(ident, f"flooded: {count} rows, sum {count * (count + 1) // 2}").messages]
    )


def _confirm_form(task: FakeTask) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {"go": {"type": "boolean", "title": "Go ahead?", "default": True}},
        "required": ["go"],
    }
    return {
        "jsonrpc": "2.0",
        "id": f"ask-{task.ident}",
        "method": "elicitation/create",
        "params": {
            "message": f"Run {task.tool} on {task.topic}?",
            "requestedSchema": schema,
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": task.ident}},
        },
    }


def _error(ident: Any, code: int, message: str) -> Reply:
    return Reply([{"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}])


def _result(ident: Any, result: dict[str, Any]) -> Reply:
    return Reply([{"jsonrpc": "2.0", "id": ident, "result": result}])


def _text(ident: Any, text: str, *, error: bool = False) -> Reply:
    return _result(ident, {"content": [{"type": "text", "text": text}], "isError": error})


def catalog(name: str) -> list[dict[str, Any]]:
    if name.startswith("many:"):
        return many(int(name.removeprefix("many:")))
    return [
        dict(t)
        for t in {"basic": BASIC, "weird": WEIRD, "hints": HINTS, "slow": SLOW, "tasks": TASKS}[
            name
        ]
    ]


# --- stdio ------------------------------------------------------------------------------


def _stderr_line(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def serve_stdio(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fake-mcp")
    parser.add_argument("--catalog", default="basic")
    parser.add_argument("--hang-initialize", action="store_true")
    parser.add_argument(
        "--exit-at-start", type=int, default=None, help="exit with this code at once"
    )
    parser.add_argument("--effects", type=Path, default=None)
    parser.add_argument(
        "--starts", type=Path, default=None, help="append a line here at each start"
    )
    parser.add_argument(
        "--fail-first",
        type=Path,
        default=None,
        help="exit at once unless this file exists (and create it)",
    )
    opts = parser.parse_args(argv)
    if opts.starts is not None:
        with opts.starts.open("a") as out:
            out.write(f"{os.getpid()}\n")
    if opts.fail_first is not None and not opts.fail_first.exists():
        opts.fail_first.touch()
        opts.exit_at_start = 2
    if opts.exit_at_start is not None:
        _stderr_line("cannot start: the ticket database is missing")
        return int(opts.exit_at_start)
    _stderr_line("fake tickets server ready")
    behaviour = Behaviour(catalog(opts.catalog), opts.hang_initialize, opts.effects, _stderr_line)
    behaviour.task_capable = opts.catalog == "tasks"
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = behaviour.handle(json.loads(line))
        if reply.crash:
            os._exit(3)
        for raw in reply.raw_lines:
            out.write(raw + "\n")
        for message in reply.messages:
            out.write(json.dumps(message) + "\n")
        out.flush()
    return 0


def stdio_command(*options: str) -> list[str]:
    """The argv that starts the stdio fake with ``options`` (a plain script: it needs no
    ``PYTHONPATH`` and no working directory)."""
    return [sys.executable, str(Path(__file__).resolve()), *options]


if __name__ == "__main__":
    sys.exit(serve_stdio())
