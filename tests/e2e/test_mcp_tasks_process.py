"""The real program with an MCP server whose tools can only be called as tasks: ``threadline
run`` starts the fake stdio server (``--catalog tasks``), a fake OpenAI server scripts the
model's calls, and a person watches the task's status in the playground — and stops one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.playground import mcp_server_config, playground
from tests.e2e.test_process_restart import until_true
from tests.fakes.mcp_server import stdio_command
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply

USER = {"user_name": "Ada"}


def stop_button(event: dict[str, Any]) -> str | None:
    message = event.get("message") or {}
    found = [b["action_id"] for b in message.get("buttons", []) if b["label"] == "Stop"]
    return found[0] if event.get("type") == "message" and found else None


def configure(tmp_path: Path) -> Path:
    effects = tmp_path / "effects"
    command = stdio_command("--catalog", "tasks", "--effects", str(effects))
    mcp_server_config(tmp_path, "jobs", command)
    return effects


async def test_a_task_tool_runs_with_its_status_shown_in_the_thread(tmp_path: Path) -> None:
    configure(tmp_path)
    async with FakeOpenAI() as fake:
        fake.push(
            Reply(calls=[FakeCall("jobs__research", {"topic": "tides"})]),
            Reply("Three sources agree on the tides."),
        )
        async with playground(tmp_path, fake) as play:
            await play.say("Research the tides", "event-task-1", USER)
            status = await play.until("research started")
            await play.until("Three sources agree on the tides.")
        first, second = fake.requests[0], fake.requests[1]
    assert "jobs__research" in {t["function"]["name"] for t in first.body["tools"]}
    assert "jobs__research" in json.dumps(status)
    assert "research on tides: 3 sources agree" in json.dumps(second.messages[-1])


async def test_stop_cancels_the_task_on_the_server(tmp_path: Path) -> None:
    effects = configure(tmp_path)
    async with FakeOpenAI() as fake:
        fake.push(Reply(calls=[FakeCall("jobs__stuck", {})]), Reply("never read"))
        async with playground(tmp_path, fake) as play:
            thread_id = await play.say("Dig", "event-task-2", USER)
            shown = await play.until(lambda e: stop_button(e) is not None)
            said = json.dumps(shown)  # the task's status, with Stop under it
            assert "jobs__stuck" in said and ("stuck started" in said or "still digging" in said)
            stop = stop_button(shown)
            assert stop is not None
            await play.click(thread_id, stop, USER)
            await until_true(lambda: effects.exists() and "task cancelled" in effects.read_text())
            await play.until("Stopped by Ada")
    assert effects.read_text() == "task cancelled task-1\n"
