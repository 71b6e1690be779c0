"""The real ``threadline run`` killed and started again on one data directory, and what its
playground and database show afterwards.

:class:`Life` is one run of the program (playground, the fake OpenAI server as its model);
:func:`figures` reads the data directory once everything is idle and counts what a crash could
have broken: messages that never reached a session, threads left without an answer, tool calls
without a result, commands that ran twice, second todo panels and Stop buttons left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeCall, Reply, Response

COMMAND = re.compile(r"\bcmd-([0-9a-f]{8})\b")
PLAN = re.compile(r"\bplan\b")
PLAN_HEAD = "**Plan**"


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else json.dumps(content)


def respond(body: dict[str, Any]) -> Response:
    """The fake model, answering at once from the last message of the request: a person's
    ``cmd-<marker>`` asks for a command that appends the marker to ``log.txt``, ``plan`` for a todo
    list; after a tool result, or for anything else, a few words."""
    messages: list[dict[str, Any]] = body.get("messages", [])
    last = messages[-1] if messages else {}
    said = text_of(last)
    if last.get("role") == "user" and (marker := COMMAND.search(said)):
        command = f"echo {marker.group(1)} >> log.txt"
        return Reply(
            "Running it.", calls=[FakeCall("run_command", {"command": command, "timeout_s": 10})]
        )
    if last.get("role") == "user" and PLAN.search(said):
        todos = [{"content": "Book a table", "status": "in_progress"}, {"content": "Tell the team"}]
        return Reply("Here is the plan.", calls=[FakeCall("todo_write", {"todos": todos})])
    if last.get("role") == "tool":
        return Reply("Done: that is what happened.")
    return Reply("A plain answer, streamed in small pieces to the thread.", text_chunk_chars=3)


@dataclass
class Figures:
    kills: int
    messages: int
    lost: int
    unanswered: int
    orphans: int
    duplicates: int
    panels: int
    stops: int
    markers: int

    def line(self) -> str:
        return (
            f"kills={self.kills} messages={self.messages} lost={self.lost} "
            f"unanswered={self.unanswered} orphan_tool_calls={self.orphans} "
            f"duplicate_side_effects={self.duplicates} duplicate_panels={self.panels} "
            f"stop_buttons={self.stops} commands_run={self.markers}"
        )


def transcript_rows(database: Path) -> list[dict[str, Any]]:
    with contextlib.closing(sqlite3.connect(database)) as db:
        rows = db.execute("SELECT key, body FROM messages ORDER BY key, seq").fetchall()
    return [{"key": key, **json.loads(body)} for key, body in rows]


def orphan_calls(rows: list[dict[str, Any]]) -> int:
    calls = {
        (r["key"], c["id"])
        for r in rows
        if r.get("role") == "assistant"
        for c in r.get("tool_calls", [])
    }
    answered = {(r["key"], r["call_id"]) for r in rows if r.get("role") == "tool"}
    return len(calls - answered)


def unanswered(thread: dict[str, Any]) -> bool:
    """The thread's last person's message has no message of the bot after it."""
    messages = thread["messages"]
    people = [i for i, m in enumerate(messages) if not m["bot"]]
    return bool(people) and not any(m["bot"] for m in messages[people[-1] + 1 :])


def buttons(threads: list[dict[str, Any]], label: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (t["id"], m)
        for t in threads
        for m in t["messages"]
        if any(b["label"] == label for b in m["buttons"])
    ]


def marker_counts(data: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for log in data.glob("workspaces/*/log.txt"):
        counts.update(line.strip() for line in log.read_text().splitlines() if line.strip())
    return counts


def figures(data: Path, kills: int, accepted: set[str]) -> Figures:
    """Read after the program stopped: ``playground.json`` and the SQLite database."""
    threads: list[dict[str, Any]] = json.loads((data / "playground.json").read_text())["threads"]
    rows = transcript_rows(data / "threadline.sqlite3")
    reached = {r.get("event_id") for r in rows if r.get("role") == "user"}
    counts = marker_counts(data)
    panels = sum(
        1
        for t in threads
        if sum(1 for m in t["messages"] if m["bot"] and m["text"].startswith(PLAN_HEAD)) > 1
    )
    return Figures(
        kills=kills,
        messages=len(accepted),
        lost=len(accepted - reached),
        unanswered=sum(1 for t in threads if unanswered(t)),
        orphans=orphan_calls(rows),
        duplicates=sum(1 for n in counts.values() if n > 1),
        panels=panels,
        stops=len(buttons(threads, "Stop")),
        markers=len(counts),
    )


async def poll(check: Any, within: float) -> bool:
    """Whether ``check()`` (sync or async) became true within ``within`` seconds (every 20 ms)."""
    try:
        async with asyncio.timeout(within):
            while True:
                result = check()
                if asyncio.iscoroutine(result):
                    result = await result
                if result:
                    return True
                await asyncio.sleep(0.02)
    except TimeoutError:
        return False
