"""A form an MCP server asks for, on Discord: the card's "Fill in…" is answered with a modal
(one text input a field, labelled with its kind and holding its default), a form longer than a
modal is filled in page by page, an answer that does not fit comes back privately field by
field, and the form sent reaches the server. Through discord.py against the fake, with a server
built with the ``mcp`` SDK."""

from __future__ import annotations

import json
from typing import Any

from adapters.discord.forms import TypedForms
from bot.config import McpServerSettings, ToolSettings
from bot.infra.clock import ManualClock
from bot.mcp.asking import FormAsked
from bot.mcp.form_schema import Form
from bot.mcp.pending import FormStatus, PendingForm
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


def inputs_of(modal: dict[str, Any]) -> dict[str, str | None]:
    """A modal's text inputs: custom id → the text it holds."""
    return {
        c["custom_id"]: c.get("value")
        for row in modal["data"]["components"]
        for c in row["components"]
    }


async def test_a_form_longer_than_a_modal_is_filled_in_page_by_page(discord_world: Discord) -> None:
    d = discord_world
    command = stdio_command()
    model = ScriptedModel([step(call("asking__survey", {})), text("Thanks.")])
    await d.start(
        model=model,
        mcp_servers={
            "asking": McpServerSettings(command=command[0], args=command[1:], timeout_s=60)
        },
        tools={"asking__survey": ToolSettings(approval="never")},
    )
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("how was it?")))

    def card() -> Message | None:
        found = [
            m
            for m in d.fake.world.in_channel(thread.id)
            if any(b.get("label") == "Fill in…" for b in buttons(m))
        ]
        return found[0] if found else None

    await d.wait_for(lambda: card() is not None, within=WINDOW)
    shown = card()
    assert shown is not None
    fill = next(str(b["custom_id"]) for b in buttons(shown) if b["label"] == "Fill in…")

    first = d.fake.click(shown, fill, d.ada)
    await d.wait_for(lambda: first.callbacks, within=WINDOW)
    assert first.callbacks[0]["type"] == MODAL
    assert first.callbacks[0]["data"]["title"] == "asking asks (1/2)"
    assert list(inputs_of(first.callbacks[0])) == [
        "f:name",
        "f:seats",
        "f:cabin",
        "f:newsletter",
        "f:email",
    ]
    page_one = {"f:name": "Ann", "f:seats": "five", "f:cabin": "economy", "f:email": "a@b.io"}
    kept = d.fake.submit_modal(first, d.ada, page_one)
    await d.wait_for(lambda: kept.notes, within=WINDOW)
    assert kept.notes[0]["content"] == "Page 1 of 2 is kept."
    assert kept.notes[0]["flags"] & EPHEMERAL

    stranger = d.fake.click_note(kept, "Continue (2/2)", d.bob)
    await d.wait_for(lambda: stranger.followups, within=WINDOW)
    assert stranger.followups[0]["content"] == "Only Ada L. can answer this."
    assert all(c.get("type") != MODAL for c in stranger.callbacks)

    second = d.fake.click_note(kept, "Continue (2/2)", d.ada)
    await d.wait_for(lambda: second.callbacks, within=WINDOW)
    assert second.callbacks[0]["data"]["title"] == "asking asks (2/2)"
    assert list(inputs_of(second.callbacks[0])) == ["f:meal", "f:note"]
    wrong = d.fake.submit_modal(second, d.ada, {"f:meal": "Fish", "f:note": "Window seat"})
    await d.wait_for(lambda: wrong.followups, within=WINDOW)
    note = wrong.followups[0]["content"]
    assert "• Seats (page 1 of 2): must be a whole number" in note
    assert "what you typed is kept" in note

    again = d.fake.click(shown, fill, d.ada)  # opened again: what was typed is filled in
    await d.wait_for(lambda: again.callbacks, within=WINDOW)
    assert inputs_of(again.callbacks[0]) == {
        "f:name": "Ann",
        "f:seats": "five",
        "f:cabin": "economy",
        "f:newsletter": None,
        "f:email": "a@b.io",
    }
    fixed = d.fake.submit_modal(again, d.ada, page_one | {"f:seats": "2", "f:newsletter": "no"})
    await d.wait_for(lambda: fixed.notes, within=WINDOW)
    last = d.fake.click_note(fixed, "Continue (2/2)", d.ada)
    await d.wait_for(lambda: last.callbacks, within=WINDOW)
    assert inputs_of(last.callbacks[0]) == {"f:meal": "Fish", "f:note": "Window seat"}
    sent = d.fake.submit_modal(last, d.ada, {"f:meal": "Fish", "f:note": "Window seat"})
    await d.wait_for(lambda: sent.followups, within=WINDOW)
    assert sent.followups[0]["content"] == "Sent."

    await d.wait_for(lambda: any("Thanks." in s for s in d.fake.world.shown(thread.id)), WINDOW)
    result = [m for m in model.requests[1].messages if getattr(m, "content", None)][-1]
    said = json.loads(str(result.content).removeprefix("survey: "))
    assert said == {
        "action": "accept",
        "content": {
            "name": "Ann",
            "seats": 2,
            "cabin": "economy",
            "newsletter": False,
            "email": "a@b.io",
            "meal": "fish",
            "note": "Window seat",
        },
    }


async def test_what_was_typed_is_kept_while_the_form_waits_and_within_bounds() -> None:
    clock = ManualClock()

    def form(n: int, expires_in: float) -> PendingForm:
        asked = FormAsked("asking", "asking__survey", "?", Form("?"))
        return PendingForm(f"form-{n}", "k", "discord:1", "Ada", asked, clock.now() + expires_in)

    kept = TypedForms(clock, most=2)
    soon, later, latest = form(1, 60), form(2, 120), form(3, 180)
    kept.keep(soon, "discord:1", {"name": "Ann"})
    kept.keep(later, "discord:1", {"name": "Bo"})
    kept.keep(later, "discord:1", {"meal": "fish"})
    assert kept.typed(later, "discord:1") == {"name": "Bo", "meal": "fish"}
    assert kept.typed(later, "discord:2") == {}
    kept.keep(latest, "discord:1", {"name": "Cy"})  # past the bound: the first to expire goes
    assert len(kept) == 2 and kept.typed(soon, "discord:1") == {}
    latest.status = FormStatus.SENT  # no longer waiting
    assert kept.typed(latest, "discord:1") == {}
    await clock.advance(121)  # expired
    assert len(kept) == 0
