"""The real program with an MCP server configured in threadline.toml: ``threadline run``
starts the fake stdio MCP server, a fake OpenAI server scripts the model's tool calls, and a
person talks to it through the playground's HTTP API."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.llm.wire import as_data
from tests.e2e.playground import mcp_server_config, playground
from tests.e2e.test_process_restart import card_in
from tests.fakes.mcp_server import stdio_command
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply

USER = {"user_id": "alice", "user_name": "Alice"}
# a second server that fails at start: logged, and the bot runs without its tools
BROKEN = '[mcp_servers.broken]\ncommand = "no-such-mcp-server"\n'
GATING = (
    '[mcp_servers.tickets.gating.lookup]\nenables = ["looked"]\nremembers = { seen = "id" }\n'
    '[mcp_servers.tickets.gating.close_ticket]\nrequires = ["looked"]\nchoices = { id = "seen" }\n'
)


def configure(tmp_path: Path, *, more: str = "", never_ask: tuple[str, ...] = ()) -> Path:
    effects = tmp_path / "effects"
    command = stdio_command("--effects", str(effects))
    mcp_server_config(tmp_path, "tickets", command, never_ask=never_ask, more=more)
    return effects


def approve(card: dict[str, Any], label: str = "Approve") -> str:
    action_id: str = next(b for b in card["buttons"] if b["label"] == label)["action_id"]
    return action_id


async def test_the_model_calls_an_mcp_server_through_the_real_program(tmp_path: Path) -> None:
    effects = configure(tmp_path, more=BROKEN)
    async with FakeOpenAI() as fake:
        fake.push(
            Reply(calls=[FakeCall("tickets__lookup", {"id": "T-1"})]),
            Reply("T-1: the printer is on fire."),
            Reply(calls=[FakeCall("tickets__close_ticket", {"id": "T-1"})]),
            Reply("Closed T-1."),
        )
        async with playground(tmp_path, fake) as play:
            thread_id = await play.say("What about T-1?", "event-mcp-1", USER)
            await play.until("the printer is on fire")

            await play.say("Close it", "event-mcp-2", USER, thread_id=thread_id)
            card = (await play.until(card_in))["message"]
            assert "tickets__close_ticket" in card["text"] and not effects.exists()
            assert (await play.click(thread_id, approve(card), USER))["note"] == "Approved."
            await play.until("Closed T-1.")
        first, second = fake.requests[0], fake.requests[1]
    offered = {t["function"]["name"] for t in first.body["tools"]}
    assert {"tickets__lookup", "tickets__close_ticket"} <= offered
    assert not any(name.startswith("broken__") for name in offered)
    wrapped = as_data("tickets__lookup", "T-1: printer on fire (open)")
    assert {"role": "tool", "content": wrapped}.items() <= second.messages[-1].items()
    assert effects.read_text() == "closed T-1\n"


async def test_declared_gating_in_threadline_toml_through_the_real_program(tmp_path: Path) -> None:
    effects = configure(tmp_path, never_ask=("tickets__close_ticket",), more=GATING)
    async with FakeOpenAI() as fake:
        fake.push(
            Reply(calls=[FakeCall("tickets__close_ticket", {"id": "T-1"})]),
            Reply(calls=[FakeCall("tickets__lookup", {"id": "T-1"})]),
            Reply(calls=[FakeCall("tickets__close_ticket", {"id": "T-1"})]),
            Reply("Closed T-1."),
        )
        async with playground(tmp_path, fake) as play:
            await play.say("Close T-1", "event-gate-1", USER)
            await play.until("Closed T-1.")
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
    effects = configure(tmp_path, more=BROKEN)
    seen: list[str] = []

    def shown(words: str) -> Callable[[dict[str, Any]], bool]:
        def match(event: dict[str, Any]) -> bool:
            seen.append(json.dumps(event, ensure_ascii=False))
            return words in seen[-1]

        return match

    async with FakeOpenAI() as fake:
        fake.push(
            Reply(calls=[FakeCall("tickets__close_ticket", {"id": "T-1"})]),
            Reply("Closed T-1."),
            Reply(calls=[FakeCall("tickets__close_ticket", {"id": "PROD-DB"})]),  # injected
            Reply("Summary: nothing to see."),
        )
        async with playground(tmp_path, fake) as play:
            thread_id = await play.say("Close T-1", "event-rule-1", USER)
            card = (await play.until(card_in))["message"]
            always = approve(card, "Always allow for Alice here")
            assert (await play.click(thread_id, always, USER))["note"] == "Approved."
            await play.until(shown("Closed T-1."))
            await play.say("Summarise the README", "event-rule-2", USER, thread_id=thread_id)
            await play.until(shown("Summary: nothing to see."))
    arguments = next(i for i, e in enumerate(seen) if '\\"id\\": \\"PROD-DB\\"' in e)
    assert "runs without asking" in seen[arguments] and "Always allow" in seen[arguments]
    assert arguments < next(i for i, e in enumerate(seen) if "closed PROD-DB" in e)
    assert effects.read_text() == "closed T-1\nclosed PROD-DB\n"
