"""The real program with an MCP server that asks for a form while its tool runs: ``threadline
run`` starts the server (built with the ``mcp`` SDK), a fake OpenAI server scripts the model's
call, and a person fills the form in through the playground's HTTP API — first with answers
that do not fit, then with answers that do."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

from aiohttp import ClientSession

from tests.e2e.test_process_restart import (
    WAIT,
    browser,
    free_port,
    open_page,
    stop_recorded,
    threadline,
    until_event,
    until_true,
)
from tests.fakes.mcp_asking_server import stdio_command
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply


async def thread_messages(http: ClientSession, base: str, thread_id: str) -> list[dict[str, Any]]:
    async with http.get(f"{base}/api/threads/{thread_id}") as resp:
        assert resp.status == 200, await resp.text()
        messages: list[dict[str, Any]] = (await resp.json())["messages"]
        return messages


def form_card(event: dict[str, Any]) -> bool:
    message = event.get("message") or {}
    return event.get("type") == "message" and any(
        b["label"] == "Fill in…" for b in message.get("buttons", [])
    )


async def test_a_form_an_mcp_server_asks_for_is_filled_in_in_the_playground(
    tmp_path: Path,
) -> None:
    command = stdio_command()
    (tmp_path / "threadline.toml").write_text(
        "[mcp_servers.asking]\n"
        f"command = {json.dumps(command[0])}\n"
        f"args = {json.dumps(command[1:])}\n"
        "timeout_s = 20\n"
        '[tools."asking__book"]\n'
        'approval = "never"\n'
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    user = {"user_name": "Alice"}
    async with FakeOpenAI() as fake, browser() as http:
        fake.push(Reply(calls=[FakeCall("asking__book", {})]), Reply("Booked for Ann."))
        model = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
        async with threadline(tmp_path, port, **model):
            await open_page(http, base)
            ws = await http.ws_connect(f"{base}/api/ws?client=t")
            async with http.post(
                f"{base}/api/messages",
                json={"text": "Book me a seat", "event_id": "event-form-1", **user},
            ) as resp:
                thread_id = (await resp.json())["thread_id"]
            card = (await until_event(ws, form_card))["message"]
            assert "asks Alice to fill in a form" in card["text"]
            fill = next(b for b in card["buttons"] if b["label"] == "Fill in…")["action_id"]
            async with http.post(
                f"{base}/api/actions", json={"thread_id": thread_id, "action_id": fill, **user}
            ) as resp:
                form = (await resp.json())["form"]
            assert [f["name"] for f in form["fields"]] == ["name", "seats", "cabin", "newsletter"]
            sent = {"thread_id": thread_id, "form_id": form["id"], **user}
            async with http.post(
                f"{base}/api/forms", json={**sent, "values": {"name": "Ann", "seats": "7"}}
            ) as resp:
                wrong = await resp.json()
            assert wrong["errors"] == {"seats": "must be at most 4"} and not wrong["done"]
            async with http.post(
                f"{base}/api/forms",
                json={**sent, "values": {"name": "Ann", "seats": "2", "newsletter": False}},
            ) as resp:
                right = await resp.json()
            assert right == {"note": "Sent.", "errors": {}, "done": True}
            await until_event(ws, lambda e: "Booked for Ann." in json.dumps(e))
            await ws.close()
        answered = fake.requests[1].messages[-1]
    assert answered["role"] == "tool"
    said = json.dumps(answered["content"])
    assert '\\"seats\\": 2' in said and '\\"cabin\\": \\"economy\\"' in said
    assert '\\"action\\": \\"accept\\"' in said


async def test_a_form_waiting_when_the_program_is_killed_is_closed_after_the_restart(
    tmp_path: Path,
) -> None:
    command = stdio_command()
    (tmp_path / "threadline.toml").write_text(
        "[mcp_servers.asking]\n"
        f"command = {json.dumps(command[0])}\n"
        f"args = {json.dumps(command[1:])}\n"
        "timeout_s = 20\n"
        '[tools."asking__book"]\n'
        'approval = "never"\n'
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    user = {"user_name": "Alice"}
    database = tmp_path / "data" / "threadline.sqlite3"
    async with FakeOpenAI() as fake, browser() as http:
        fake.push(
            Reply(calls=[FakeCall("asking__book", {})]), Reply("The booking was interrupted.")
        )
        model = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
        async with threadline(tmp_path, port, **model) as first:
            await open_page(http, base)
            async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                async with http.post(
                    f"{base}/api/messages",
                    json={"text": "Book me a seat", "event_id": "event-form-2", **user},
                ) as resp:
                    thread_id = (await resp.json())["thread_id"]
                card = (await until_event(ws, form_card))["message"]
            await until_true(lambda: stop_recorded(database, card["id"]))
            first.send_signal(signal.SIGKILL)
            await first.wait()
        async with threadline(tmp_path, port, **model):
            # the recovery starts before the program says it serves, and may have answered
            # before a page connects: the thread as the playground keeps it is read instead
            async with asyncio.timeout(WAIT):
                while True:
                    messages = await thread_messages(http, base, thread_id)
                    if any("The booking was interrupted." in m["text"] for m in messages):
                        break
                    await asyncio.sleep(0.05)
    closed = next(m for m in messages if m["id"] == card["id"])
    assert closed["buttons"] == [] and "Interrupted by a restart" in closed["text"]
