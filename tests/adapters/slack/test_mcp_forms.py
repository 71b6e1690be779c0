"""A form an MCP server asks for, on Slack: the card's "Fill in…" opens a modal with one input
a field (``views.open``), answers that do not fit come back beside their fields
(``response_action: errors``), and the form sent goes to the server. Through slack-bolt against
the fake Slack, with a server built with the ``mcp`` SDK."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.slack.conftest import slack_world
from tests.fakes.mcp_asking_server import stdio_command
from tests.fakes.scripted_model import ScriptedModel, call, step, text
from tests.fakes.slack import MENTION, payloads


def values(view: dict[str, Any], typed: dict[str, Any]) -> dict[str, Any]:
    """What Slack sends for the modal's inputs, ``typed`` by field name."""
    out: dict[str, Any] = {}
    for block in view["blocks"]:
        if block.get("type") != "input":
            continue
        name, element = block["block_id"].removeprefix("f:"), block["element"]
        kind = element["type"]
        value = typed.get(name)
        if kind == "checkboxes":
            state = {"type": kind, "selected_options": element["options"] if value else []}
        elif kind == "static_select":
            picked = next((o for o in element["options"] if o["value"] == value), None)
            state = {"type": kind, "selected_option": picked}
        else:
            state = {"type": kind, "value": value}
        out[block["block_id"]] = {element["action_id"]: state}
    return out


async def test_a_form_opens_as_a_modal_and_its_errors_show_beside_the_fields(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = stdio_command()
    model = ScriptedModel([step(call("asking__book", {})), text("Booked.")])
    server = {"command": command[0], "args": command[1:], "timeout_s": 20}
    async with slack_world(
        tmp_path,
        monkeypatch,
        mode="http",
        model=model,
        mcp_servers={"asking": server},
        tools={"asking__book": {"approval": "never"}},
    ) as world:
        fake = world.fake
        root = await fake.say("UADA", "CGENERAL", f"{MENTION} book me a seat")

        def card() -> Any:
            found = [
                m
                for m in fake.replies(root.channel, root.ts)
                if any(b["text"]["text"] == "Fill in…" for b in m.buttons)
            ]
            return found[0] if found else None

        await fake.wait_for(lambda: card() is not None, within=20)
        assert "asks Ada to fill in a form" in card().shown

        assert (await fake.click("UGRACE", card(), "Fill in…")).acked_in_time
        await fake.wait_for(lambda: fake.ephemerals("UGRACE") == ["Only Ada can answer this."])
        assert fake.api.views == []

        await fake.click("UADA", card(), "Fill in…")
        await fake.wait_for(lambda: len(fake.api.views) == 1)
        view = fake.api.views[0]
        kinds = {b["block_id"]: b["element"]["type"] for b in view["blocks"][1:]}
        assert kinds == {
            "f:name": "plain_text_input",
            "f:seats": "number_input",
            "f:cabin": "static_select",
            "f:newsletter": "checkboxes",
        }
        seats = view["blocks"][2]["element"]
        assert (seats["min_value"], seats["max_value"], seats["is_decimal_allowed"]) == (
            "1",
            "4",
            False,
        )

        user = fake.workspace.users["UADA"]
        wrong = payloads.view_submission(user, view, values(view, {"name": "A", "seats": "9"}))
        sent = await fake.deliver("interactive", wrong)
        assert sent.acked_in_time
        assert json.loads(sent.answer) == {
            "response_action": "errors",
            "errors": {"f:name": "must be at least 2 characters", "f:seats": "must be at most 4"},
        }

        right = payloads.view_submission(
            user, view, values(view, {"name": "Ann", "seats": "2", "cabin": "business"})
        )
        sent = await fake.deliver("interactive", right)
        assert sent.acked_in_time and sent.answer in ("", "{}")
        await fake.wait_for(lambda: "Sent." in fake.ephemerals("UADA"))
        await fake.wait_for(
            lambda: any("Booked." in m.shown for m in fake.replies(root.channel, root.ts)),
            within=20,
        )
        [result] = [r for r in model.requests[1].messages if getattr(r, "content", None)][-1:]
    said = json.loads(str(result.content).removeprefix("booking: "))
    assert said == {
        "action": "accept",
        "content": {"name": "Ann", "seats": 2, "cabin": "business", "newsletter": False},
    }
