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

from tests.e2e.playground import mcp_server_config, playground
from tests.e2e.test_process_restart import WAIT, browser, stop_recorded, until_true
from tests.fakes.mcp_asking_server import stdio_command
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply

USER = {"user_name": "Alice"}


def form_card(event: dict[str, Any]) -> bool:
    message = event.get("message") or {}
    return event.get("type") == "message" and any(
        b["label"] == "Fill in…" for b in message.get("buttons", [])
    )


async def test_a_form_an_mcp_server_asks_for_is_filled_in_in_the_playground(
    tmp_path: Path,
) -> None:
    mcp_server_config(tmp_path, "asking", stdio_command(), never_ask=["asking__book"])
    async with FakeOpenAI() as fake:
        fake.push(Reply(calls=[FakeCall("asking__book", {})]), Reply("Booked for Ann."))
        async with playground(tmp_path, fake) as play:
            thread_id = await play.say("Book me a seat", "event-form-1", USER)
            card = (await play.until(form_card))["message"]
            assert "asks Alice to fill in a form" in card["text"]
            fill = next(b for b in card["buttons"] if b["label"] == "Fill in…")["action_id"]
            form = (await play.click(thread_id, fill, USER))["form"]
            assert [f["name"] for f in form["fields"]] == ["name", "seats", "cabin", "newsletter"]
            sent = {"thread_id": thread_id, "form_id": form["id"], **USER}
            async with play.http.post(
                f"{play.base}/api/forms", json={**sent, "values": {"name": "Ann", "seats": "7"}}
            ) as resp:
                wrong = await resp.json()
            assert wrong["errors"] == {"seats": "must be at most 4"} and not wrong["done"]
            async with play.http.post(
                f"{play.base}/api/forms",
                json={**sent, "values": {"name": "Ann", "seats": "2", "newsletter": False}},
            ) as resp:
                right = await resp.json()
            assert right == {"note": "Sent.", "errors": {}, "done": True}
            await play.until("Booked for Ann.")
        answered = fake.requests[1].messages[-1]
    assert answered["role"] == "tool"
    said = json.dumps(answered["content"])
    assert '\\"seats\\": 2' in said and '\\"cabin\\": \\"economy\\"' in said
    assert '\\"action\\": \\"accept\\"' in said


async def test_a_form_waiting_when_the_program_is_killed_is_closed_after_the_restart(
    tmp_path: Path,
) -> None:
    mcp_server_config(tmp_path, "asking", stdio_command(), never_ask=["asking__book"])
    database = tmp_path / "data" / "threadline.sqlite3"
    async with FakeOpenAI() as fake, browser() as http:  # its session outlives the restart
        fake.push(
            Reply(calls=[FakeCall("asking__book", {})]), Reply("The booking was interrupted.")
        )
        async with playground(tmp_path, fake, http=http) as first:
            thread_id = await first.say("Book me a seat", "event-form-2", USER)
            card = (await first.until(form_card))["message"]
            await until_true(lambda: stop_recorded(database, card["id"]))
            first.process.send_signal(signal.SIGKILL)
            await first.process.wait()
        async with playground(tmp_path, fake, http=http) as second:
            # the recovery starts before the program says it serves, and may have answered
            # before a page connects: the thread as the playground keeps it is read instead
            async with asyncio.timeout(WAIT):
                while True:
                    messages = await second.messages(thread_id)
                    if any("The booking was interrupted." in m["text"] for m in messages):
                        break
                    await asyncio.sleep(0.05)
    closed = next(m for m in messages if m["id"] == card["id"])
    assert closed["buttons"] == [] and "Interrupted by a restart" in closed["text"]
