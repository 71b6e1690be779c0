"""The real program with an MCP server configured in threadline.toml: ``threadline run``
starts the fake stdio MCP server, a fake OpenAI server scripts the model's tool calls, and a
person talks to it through the playground's HTTP API."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.llm.wire import as_data
from tests.e2e.test_process_restart import (
    browser,
    card_in,
    free_port,
    open_page,
    threadline,
    until_event,
)
from tests.fakes.mcp_server import stdio_command
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply


def configure(tmp_path: Path) -> Path:
    effects = tmp_path / "effects"
    command = stdio_command("--effects", str(effects))
    (tmp_path / "threadline.toml").write_text(
        "[mcp_servers.tickets]\n"
        f"command = {json.dumps(command[0])}\n"
        f"args = {json.dumps(command[1:])}\n"
        "timeout_s = 20\n"
        "[mcp_servers.broken]\n"  # fails at start: logged, and the bot runs without its tools
        'command = "no-such-mcp-server"\n'
    )
    return effects


async def test_the_model_calls_an_mcp_server_through_the_real_program(tmp_path: Path) -> None:
    effects = configure(tmp_path)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    user = {"user_id": "alice", "user_name": "Alice"}
    async with FakeOpenAI() as fake, browser() as http:
        fake.push(
            Reply(calls=[FakeCall("tickets__lookup", {"id": "T-1"})]),
            Reply("T-1: the printer is on fire."),
            Reply(calls=[FakeCall("tickets__close_ticket", {"id": "T-1"})]),
            Reply("Closed T-1."),
        )
        model = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
        async with threadline(tmp_path, port, **model):
            await open_page(http, base)
            ws = await http.ws_connect(f"{base}/api/ws?client=t")
            async with http.post(
                f"{base}/api/messages",
                json={"text": "What about T-1?", "event_id": "event-mcp-1", **user},
            ) as resp:
                thread_id = (await resp.json())["thread_id"]
            await until_event(ws, lambda e: "the printer is on fire" in json.dumps(e))

            async with http.post(
                f"{base}/api/messages",
                json={
                    "thread_id": thread_id,
                    "text": "Close it",
                    "event_id": "event-mcp-2",
                    **user,
                },
            ) as resp:
                assert resp.status == 202
            card = (await until_event(ws, card_in))["message"]
            assert "tickets__close_ticket" in card["text"] and not effects.exists()
            approve = next(b for b in card["buttons"] if b["label"] == "Approve")["action_id"]
            async with http.post(
                f"{base}/api/actions", json={"thread_id": thread_id, "action_id": approve, **user}
            ) as resp:
                assert (await resp.json())["note"] == "Approved."
            await until_event(ws, lambda e: "Closed T-1." in json.dumps(e))
            await ws.close()
        first, second = fake.requests[0], fake.requests[1]
    offered = {t["function"]["name"] for t in first.body["tools"]}
    assert {"tickets__lookup", "tickets__close_ticket"} <= offered
    assert not any(name.startswith("broken__") for name in offered)
    wrapped = as_data("tickets__lookup", "T-1: printer on fire (open)")
    assert {"role": "tool", "content": wrapped}.items() <= second.messages[-1].items()
    assert effects.read_text() == "closed T-1\n"


async def test_declared_gating_in_threadline_toml_through_the_real_program(tmp_path: Path) -> None:
    effects = tmp_path / "effects"
    command = stdio_command("--effects", str(effects))
    (tmp_path / "threadline.toml").write_text(
        f"[mcp_servers.tickets]\ncommand = {json.dumps(command[0])}\nargs = {json.dumps(command[1:])}\ntimeout_s = 20\n"
        '[mcp_servers.tickets.gating.lookup]\nenables = ["looked"]\nremembers = { seen = "id" }\n'
        '[mcp_servers.tickets.gating.close_ticket]\nrequires = ["looked"]\nchoices = { id = "seen" }\n'
        '[tools."tickets__close_ticket"]\napproval = "never"\n'
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    user = {"user_id": "alice", "user_name": "Alice"}
    async with FakeOpenAI() as fake, browser() as http:
        fake.push(
            Reply(calls=[FakeCall("tickets__close_ticket", {"id": "T-1"})]),
            Reply(calls=[FakeCall("tickets__lookup", {"id": "T-1"})]),
            Reply(calls=[FakeCall("tickets__close_ticket", {"id": "T-1"})]),
            Reply("Closed T-1."),
        )
        model = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
        async with threadline(tmp_path, port, **model):
            await open_page(http, base)
            ws = await http.ws_connect(f"{base}/api/ws?client=t")
            async with http.post(
                f"{base}/api/messages",
                json={"text": "Close T-1", "event_id": "event-gate-1", **user},
            ) as resp:
                assert resp.status == 202
            await until_event(ws, lambda e: "Closed T-1." in json.dumps(e))
            await ws.close()
        first, second, third = fake.requests[0], fake.requests[1], fake.requests[2]
    names = [{t["function"]["name"] for t in r.body["tools"]} for r in (first, third)]
    assert "tickets__close_ticket" not in names[0] and "tickets__lookup" in names[0]
    assert "tickets__close_ticket" in names[1]
    close = next(t for t in third.body["tools"] if t["function"]["name"] == "tickets__close_ticket")
    assert close["function"]["parameters"]["properties"]["id"]["enum"] == ["T-1"]
    assert "needs the state looked (off now)" in json.dumps(second.messages[-1])
    assert effects.read_text() == "closed T-1\n"


async def test_a_call_an_always_allow_rule_lets_run_shows_its_arguments_first(
    tmp_path: Path,
) -> None:
    effects = configure(tmp_path)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    user = {"user_id": "alice", "user_name": "Alice"}
    seen: list[str] = []

    def shown(words: str) -> Callable[[dict[str, Any]], bool]:
        def match(event: dict[str, Any]) -> bool:
            seen.append(json.dumps(event, ensure_ascii=False))
            return words in seen[-1]

        return match

    async with FakeOpenAI() as fake, browser() as http:
        fake.push(
            Reply(calls=[FakeCall("tickets__close_ticket", {"id": "T-1"})]),
            Reply("Closed T-1."),
            Reply(calls=[FakeCall("tickets__close_ticket", {"id": "PROD-DB"})]),  # injected
            Reply("Summary: nothing to see."),
        )
        model = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
        async with threadline(tmp_path, port, **model):
            await open_page(http, base)
            ws = await http.ws_connect(f"{base}/api/ws?client=t")
            async with http.post(
                f"{base}/api/messages",
                json={"text": "Close T-1", "event_id": "event-rule-1", **user},
            ) as resp:
                thread_id = (await resp.json())["thread_id"]
            card = (await until_event(ws, card_in))["message"]
            always = next(b for b in card["buttons"] if b["label"] == "Always allow for Alice here")
            async with http.post(
                f"{base}/api/actions",
                json={"thread_id": thread_id, "action_id": always["action_id"], **user},
            ) as resp:
                assert (await resp.json())["note"] == "Approved."
            await until_event(ws, shown("Closed T-1."))
            async with http.post(
                f"{base}/api/messages",
                json={
                    "thread_id": thread_id,
                    "text": "Summarise the README",
                    "event_id": "event-rule-2",
                    **user,
                },
            ) as resp:
                assert resp.status == 202
            await until_event(ws, shown("Summary: nothing to see."))
            await ws.close()
    arguments = next(i for i, e in enumerate(seen) if '\\"id\\": \\"PROD-DB\\"' in e)
    assert "runs without asking" in seen[arguments] and "Always allow" in seen[arguments]
    assert arguments < next(i for i, e in enumerate(seen) if "closed PROD-DB" in e)
    assert effects.read_text() == "closed T-1\nclosed PROD-DB\n"
