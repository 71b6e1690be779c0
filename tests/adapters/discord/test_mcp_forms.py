"""A form an MCP server asks for, on Discord: the card's "Fill in…" is answered with a modal
(one text input a field, labelled with its kind and holding its default), an answer that does
not fit comes back privately field by field, and the form sent reaches the server. Through
discord.py against the fake, with a server built with the ``mcp`` SDK."""

from __future__ import annotations

import json
from typing import Any

from bot.config import McpServerSettings, ToolSettings
from tests.adapters.discord.conftest import Discord
from tests.fakes.discord import Message
from tests.fakes.discord.rest import EPHEMERAL
from tests.fakes.discord.server import MODAL
from tests.fakes.mcp_asking_server import stdio_command
from tests.fakes.scripted_model import ScriptedModel, call, step, text

WINDOW = 15.0


def buttons(message: Message) -> list[dict[str, Any]]:
    return [b for row in message.components for b in row["components"]]


async def test_a_form_is_filled_in_a_discord_modal(discord_world: Discord) -> None:
    d = discord_world
    command = stdio_command()
    model = ScriptedModel([step(call("asking__book", {})), text("Booked.")])
    await d.start(
        model=model,
        mcp_servers={
            "asking": McpServerSettings(command=command[0], args=command[1:], timeout_s=60)
        },
        tools={"asking__book": ToolSettings(approval="never")},
    )
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("book me a seat")))

    def card() -> Message | None:
        found = [
            m
            for m in d.fake.world.in_channel(thread.id)
            if any(b.get("label") == "Fill in…" for b in buttons(m))
        ]
        return found[0] if found else None

    await d.wait_for(lambda: card() is not None, within=WINDOW)
    shown = card()
    assert shown is not None and "asks Ada" in shown.content
    fill = next(str(b["custom_id"]) for b in buttons(shown) if b["label"] == "Fill in…")

    other = d.fake.click(shown, fill, d.bob)
    await d.wait_for(lambda: other.followups, within=WINDOW)
    assert other.followups[0]["content"].startswith("Only Ada")

    clicked = d.fake.click(shown, fill, d.ada)
    await d.wait_for(lambda: clicked.callbacks, within=WINDOW)
    modal = clicked.callbacks[0]
    assert modal["type"] == MODAL
    inputs = [c for row in modal["data"]["components"] for c in row["components"]]
    assert [(i["custom_id"], i["label"]) for i in inputs] == [
        ("f:name", "Name"),
        ("f:seats", "Seats"),
        ("f:cabin", "Cabin"),
        ("f:newsletter", "Newsletter (yes or no)"),
    ]
    assert next(i for i in inputs if i["custom_id"] == "f:cabin")["value"] == "economy"

    wrong = d.fake.submit_modal(clicked, d.ada, {"f:name": "Ann", "f:seats": "five"})
    await d.wait_for(lambda: wrong.followups, within=WINDOW)
    note = wrong.followups[0]
    assert note["flags"] == EPHEMERAL and "• Seats: must be a whole number" in note["content"]

    again = d.fake.click(shown, fill, d.ada)  # a modal closes once sent: it is opened again
    await d.wait_for(lambda: again.callbacks, within=WINDOW)
    typed = {"f:name": "Ann", "f:seats": "3", "f:cabin": "Business", "f:newsletter": "yes"}
    right = d.fake.submit_modal(again, d.ada, typed)
    await d.wait_for(lambda: right.followups, within=WINDOW)
    assert right.followups[0]["content"] == "Sent."
    await d.wait_for(lambda: any("Booked." in s for s in d.fake.world.shown(thread.id)), WINDOW)
    result = [m for m in model.requests[1].messages if getattr(m, "content", None)][-1]
    said = json.loads(str(result.content).removeprefix("booking: "))
    assert said == {
        "action": "accept",
        "content": {"name": "Ann", "seats": 3, "cabin": "business", "newsletter": True},
    }
