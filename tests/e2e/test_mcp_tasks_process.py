"""The real program with an MCP server whose tools can only be called as tasks: ``threadline
run`` starts the fake stdio server (``--catalog tasks``), a fake OpenAI server scripts the
model's calls, and a person watches the task's status in the playground — and stops one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.test_process_restart import (
    browser,
    free_port,
    open_page,
    threadline,
    until_event,
    until_true,
)
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
    (tmp_path / "threadline.toml").write_text(
        "[mcp_servers.jobs]\n"
        f"command = {json.dumps(command[0])}\n"
        f"args = {json.dumps(command[1:])}\n"
        "timeout_s = 20\n"
    )
    return effects


async def test_a_task_tool_runs_with_its_status_shown_in_the_thread(tmp_path: Path) -> None:
    configure(tmp_path)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with FakeOpenAI() as fake, browser() as http:
        fake.push(
            Reply(calls=[FakeCall("jobs__research", {"topic": "tides"})]),
            Reply("Three sources agree on the tides."),
        )
        model = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
        async with threadline(tmp_path, port, **model):
            await open_page(http, base)
            ws = await http.ws_connect(f"{base}/api/ws?client=t")
            async with http.post(
                f"{base}/api/messages",
                json={"text": "Research the tides", "event_id": "event-task-1", **USER},
            ) as resp:
                assert resp.status == 202
            status = await until_event(ws, lambda e: "research started" in json.dumps(e))
            await until_event(ws, lambda e: "Three sources agree on the tides." in json.dumps(e))
            await ws.close()
        first, second = fake.requests[0], fake.requests[1]
    assert "jobs__research" in {t["function"]["name"] for t in first.body["tools"]}
    assert "jobs__research" in json.dumps(status)
    assert "research on tides: 3 sources agree" in json.dumps(second.messages[-1])


async def test_stop_cancels_the_task_on_the_server(tmp_path: Path) -> None:
    effects = configure(tmp_path)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with FakeOpenAI() as fake, browser() as http:
        fake.push(Reply(calls=[FakeCall("jobs__stuck", {})]), Reply("never read"))
        model = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
        async with threadline(tmp_path, port, **model):
            await open_page(http, base)
            ws = await http.ws_connect(f"{base}/api/ws?client=t")
            async with http.post(
                f"{base}/api/messages",
                json={"text": "Dig", "event_id": "event-task-2", **USER},
            ) as resp:
                thread_id = (await resp.json())["thread_id"]
            shown = await until_event(ws, lambda e: stop_button(e) is not None)
            said = json.dumps(shown)  # the task's status, with Stop under it
            assert "jobs__stuck" in said and ("stuck started" in said or "still digging" in said)
            stop = stop_button(shown)
            async with http.post(
                f"{base}/api/actions",
                json={"thread_id": thread_id, "action_id": stop, "client_id": "t", **USER},
            ) as resp:
                assert resp.status in (200, 202), await resp.text()
            await until_true(lambda: effects.exists() and "task cancelled" in effects.read_text())
            await until_event(ws, lambda e: "Stopped by Ada" in json.dumps(e))
            await ws.close()
    assert effects.read_text() == "task cancelled task-1\n"
