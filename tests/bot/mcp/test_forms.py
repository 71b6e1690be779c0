"""Forms an MCP server asks the run's person to fill in, through the core: a scripted model
calls tools of a server built with the ``mcp`` SDK (tests/fakes/mcp_asking_server.py) that ask
for a form or a link while they run; the card, who may answer, the checks on the answer, and
what the server got back (the tool's result) are checked. Real SQLite store, recording
surface, manual clock."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.api import actions
from bot.api.inbound import Author, Inbound, ThreadKey
from bot.config import Settings
from bot.core import Core
from bot.infra.clock import ManualClock
from bot.llm.messages import ToolResult, Usage, UserMessage
from bot.mcp.pending import PendingForm
from bot.mcp.servers import McpServers
from bot.storage.sqlite.store import SqliteStore
from bot.tools.builtin import builtin_tools
from bot.tools.registry import ToolRegistry
from bot.tools.sandbox import Workspace
from tests.fakes.mcp_asking_server import PNG, stdio_command
from tests.fakes.scripted_model import ScriptedModel, Step, call, step, text
from tests.fakes.surface import FakeMessage, RecordingSurface, drive, run_until

KEY = ThreadKey("slack:T1:C1:100.1")
ALICE = Author(id="slack:U1", display_name="Alice")
BOB = Author(id="slack:U2", display_name="Bob")


@dataclass
class Files:
    """The surface's file transfer: what was posted."""

    sent: list[tuple[str, bytes]] = field(default_factory=list)

    async def fetch(self, file: object, limit: int) -> bytes:
        raise AssertionError("nothing is fetched here")

    async def send(self, name: str, data: bytes) -> None:
        self.sent.append((name, data))


class World:
    def __init__(self, tmp_path: Path, vision: str = "auto", **server: Any) -> None:
        command = stdio_command()
        servers = {
            "asking": {"command": command[0], "args": command[1:], "timeout_s": 10, **server}
        }
        self.clock = ManualClock(start=1_000_000.0)
        self.model = ScriptedModel([])
        self.settings = Settings(data_dir=tmp_path, mcp_servers=servers, vision=vision)
        self.surface = RecordingSurface(self.clock, thread_key=KEY)
        self.files = Files()
        self.surface.files = self.files  # type: ignore[attr-defined]
        registry = ToolRegistry(builtin_tools())
        self.core = Core(
            self.settings,
            SqliteStore(self.settings.database_path),
            self.model,
            registry,
            self.clock,
        )
        self.mcp = McpServers(self.settings, self.clock, asking=self.core.asking)
        self.mcp.install(registry)
        self.core.register_surfaces(
            "slack:", lambda key: self.surface, lambda key: key.rsplit(":", 1)[0]
        )
        self.running: asyncio.Future[None] | None = None

    def start(self, words: str, *steps: Step) -> None:
        self.model.steps = list(steps)
        self.running = asyncio.ensure_future(
            self.core.handle(Inbound(KEY, ALICE, words, f"ev-{words}"), self.surface)
        )

    async def card(self) -> FakeMessage:
        def shown() -> bool:
            return any(self._form_buttons(m) for m in self.surface.live())

        await run_until(self.clock, shown)
        return next(m for m in self.surface.live() if self._form_buttons(m))

    async def approve(self) -> None:
        """Approve the call (a tool without hints asks first)."""

        def shown() -> bool:
            return any("Approve" in [b.label for b in m.buttons] for m in self.surface.live())

        await run_until(self.clock, shown)
        card = next(m for m in self.surface.live() if "Approve" in [b.label for b in m.buttons])
        note = await drive(
            self.clock, self.core.on_action(button(card, "Approve"), ALICE, self.surface, card.id)
        )
        assert note == "Approved."

    @staticmethod
    def _form_buttons(message: FakeMessage) -> bool:
        return any(
            isinstance(actions.parse(b.action_id), actions.AnswerForm) for b in message.buttons
        )

    async def finish(self) -> None:
        assert self.running is not None
        await drive(self.clock, self.running)
        await drive(self.clock, self.core.wait_idle())

    async def results(self) -> list[str]:
        session = await self.core.store.load_session(KEY, self.clock.now())
        return [m.content for m in session.messages if isinstance(m, ToolResult)]


def form_id(card: FakeMessage) -> str:
    for button in card.buttons:
        match actions.parse(button.action_id):
            case actions.AnswerForm(_, found):
                return found
            case _:
                pass
    raise AssertionError("no form button")


def button(card: FakeMessage, label: str) -> str:
    return next(b.action_id for b in card.buttons if b.label == label)


@pytest.fixture
async def make_world(tmp_path: Path) -> AsyncIterator[Any]:
    made: list[World] = []

    async def make(vision: str = "auto", **server: Any) -> World:
        world = World(tmp_path, vision, **server)
        await world.core.start()
        await world.mcp.start()
        made.append(world)
        return world

    yield make
    for world in made:
        if world.running is not None and not world.running.done():
            world.running.cancel()
            await asyncio.gather(world.running, return_exceptions=True)
        await world.mcp.aclose()
        await world.core.aclose()


async def test_a_form_is_shown_to_the_runs_person_checked_and_sent(make_world: Any) -> None:
    world = await make_world()
    world.start("book it", step(call("asking__book", {})), text("Booked."))
    await world.approve()
    card = await world.card()
    assert "asks Alice to fill in a form" in card.text and "Who is travelling?" in card.text
    assert "**Seats** (a whole number from 1 to 4; required)" in card.text
    assert [b.label for b in card.buttons] == ["Fill in…", "Decline", "Cancel"]
    found = form_id(card)

    refused = await world.core.open_form(found, BOB)
    assert refused == "Only Alice can answer this."
    wrong = await world.core.answer_form(found, BOB, {"name": "Bo", "seats": "2"}, world.surface)
    assert wrong.note == "Only Alice can answer this." and not wrong.done
    opened = await world.core.open_form(found, ALICE)
    assert isinstance(opened, PendingForm) and opened.asked.form is not None

    bad = await world.core.answer_form(
        found, ALICE, {"name": "A", "seats": "9", "cabin": "first"}, world.surface
    )
    assert dict(bad.errors) == {
        "name": "must be at least 2 characters",
        "seats": "must be at most 4",
        "cabin": "pick one of: economy, business",
    }
    assert await world.core.open_form(found, ALICE) is not None and not bad.done  # still waiting

    sent = await world.core.answer_form(
        found, ALICE, {"name": "Ann", "seats": "2", "newsletter": True}, world.surface
    )
    assert sent.done and sent.note == "Sent."
    await world.finish()
    [result] = await world.results()
    answer = json.loads(result.removeprefix("booking: "))
    assert answer == {
        "action": "accept",
        "content": {"name": "Ann", "seats": 2, "cabin": "economy", "newsletter": True},
    }
    shown = world.surface.messages[card.id]
    assert "Answered** by Alice" in shown.text and shown.buttons == ()
    assert world.surface.texts()[-1] == "Booked."
    again = await world.core.answer_form(found, ALICE, {"name": "Ann", "seats": "2"}, None)
    assert "no longer waiting" in again.note


@pytest.mark.parametrize(("label", "action"), [("Decline", "decline"), ("Cancel", "cancel")])
async def test_a_form_declined_or_cancelled(make_world: Any, label: str, action: str) -> None:
    world = await make_world()
    world.start("book it", step(call("asking__book", {})), text("Not booked."))
    await world.approve()
    card = await world.card()
    note = await drive(
        world.clock, world.core.on_action(button(card, label), BOB, world.surface, card.id)
    )
    assert note == "Only Alice can answer this."
    note = await drive(
        world.clock, world.core.on_action(button(card, label), ALICE, world.surface, card.id)
    )
    assert note == f"{label}d." if label == "Decline" else note == "Cancelled."
    await world.finish()
    [result] = await world.results()
    assert json.loads(result.removeprefix("booking: ")) == {"action": action, "content": None}
    assert world.surface.messages[card.id].buttons == ()


async def test_a_link_is_shown_and_accepted_when_the_person_says_it_is_done(
    make_world: Any,
) -> None:
    world = await make_world()
    world.start("sign in", step(call("asking__sign_in", {})), text("Signed in."))
    await world.approve()
    card = await world.card()
    assert "asks Alice to open a link" in card.text
    assert "(to **tickets.example.com**): https://tickets.example.com/sign-in?s=1" in card.text
    note = await drive(
        world.clock,
        world.core.on_action(button(card, "I opened it: done"), ALICE, world.surface, card.id),
    )
    assert note == "Done: the server is told."
    await world.finish()
    assert await world.results() == ["sign-in: accept"]


async def test_a_form_nobody_answers_expires_and_the_server_gets_cancel(
    make_world: Any,
) -> None:
    world = await make_world(form_timeout_s=60)
    world.start("book it", step(call("asking__book", {})), text("Nobody answered."))
    await world.approve()
    card = await world.card()
    await world.finish()  # the clock moves on past the card's expiry
    [result] = await world.results()
    assert json.loads(result.removeprefix("booking: "))["action"] == "cancel"
    shown = world.surface.messages[card.id]
    assert "Expired" in shown.text and shown.buttons == ()


async def test_a_form_the_server_describes_badly_is_refused_with_a_note(make_world: Any) -> None:
    world = await make_world()
    world.start("where?", step(call("asking__bad_form", {})), text("It failed."))
    await world.approve()
    await world.finish()
    [result] = await world.results()
    assert result.startswith("refused:") and "'address' is of type 'object'" in result
    assert any("asked for a form this client cannot show" in t for t in world.surface.texts())


async def test_a_flood_of_forms_is_declined_past_three(make_world: Any) -> None:
    world = await make_world()
    world.start("flood", step(call("asking__flood", {})), text("Flooded."))
    await world.approve()

    def three() -> bool:
        return sum(1 for m in world.surface.live() if "fill in a form" in m.text) == 3

    await run_until(world.clock, three)
    for card in [m for m in world.surface.live() if "fill in a form" in m.text]:
        await drive(
            world.clock, world.core.on_action(button(card, "Cancel"), ALICE, world.surface, card.id)
        )
    await world.finish()
    [result] = await world.results()
    assert sorted(result.removeprefix("flood: ").split(",")) == ["cancel"] * 3 + ["decline"] * 2
    assert any("asked for another form while 3 wait" in t for t in world.surface.texts()), (
        world.surface.texts()
    )


async def test_a_stop_closes_the_form_and_its_card(make_world: Any) -> None:
    world = await make_world()
    world.start("book it", step(call("asking__book", {})), text("unused"))
    await world.approve()
    card = await world.card()
    decline = button(card, "Decline")
    assert await world.core.stop(KEY, ALICE) == "stopping"
    await world.finish()
    shown = world.surface.messages[card.id]
    assert "Closed" in shown.text and shown.buttons == ()
    late = await drive(world.clock, world.core.on_action(decline, ALICE, world.surface, card.id))
    assert "no longer waiting" in (late or "")


@pytest.mark.parametrize("vision", ["on", "off"])
async def test_content_for_people_is_shown_and_images_are_posted_and_seen(
    make_world: Any, vision: str
) -> None:
    world = await make_world(vision=vision)
    world.start("picture", step(call("asking__picture", {})), text("A red dot."))
    await world.approve()
    await world.finish()
    [result] = await world.results()
    assert "USER ONLY" not in result and "ASSISTANT ONLY: describe it briefly." in result
    assert any(
        "asking__picture: USER ONLY: the picture was made at 09:00." in t
        for t in world.surface.texts()
    )
    assert not any("ASSISTANT ONLY" in t for t in world.surface.texts())
    assert world.files.sent == [("asking__picture-1.png", PNG)]
    sent = world.model.requests[1].messages
    shown = [m for m in sent if isinstance(m, UserMessage) and m.images]
    if vision == "on":
        assert (
            "[image/png image asking__picture-1.png: posted in the thread; you see it in" in result
        )
        [images] = shown
        assert images.images[0].startswith("data:image/png;base64,")
    else:
        assert "posted in the thread; this model is not shown images]" in result
        assert shown == []


async def test_a_local_server_is_given_the_threads_workspace_as_its_root(
    make_world: Any, tmp_path: Path
) -> None:
    world = await make_world()
    world.start("where", step(call("asking__where", {})), text("There."))
    await world.approve()
    await world.finish()
    [result] = await world.results()
    workspace = Workspace.for_thread(tmp_path / "workspaces", KEY).root
    assert result == f'roots: ["{workspace.as_uri()}"]'


async def approval_card(world: World, tool: str) -> FakeMessage:
    def shown() -> bool:
        return any(f"`{tool}`" in m.text and m.buttons for m in world.surface.live())

    await run_until(world.clock, shown)
    return next(m for m in world.surface.live() if f"`{tool}`" in m.text and m.buttons)


async def test_a_sampling_request_is_shown_in_full_and_runs_on_the_threads_model_once_approved(
    make_world: Any,
) -> None:
    world = await make_world(sampling_max_tokens=300)
    used = Usage(prompt_tokens=40, completion_tokens=7)
    world.start(
        "summarise",
        step(call("asking__summarise", {"text": "A very long text."})),
        text("A one-line summary.", usage=used),
        text("Summarised."),
    )
    await world.approve()
    card = await approval_card(world, "asking__sampling")
    assert '"text": "A very long text."' in card.text
    assert '"system": "Summarise in one line."' in card.text
    assert '"max_tokens_asked": 5000' in card.text and '"max_tokens": 300' in card.text
    before = (await world.core.store.load_session(KEY, world.clock.now())).usage.total
    note = await drive(
        world.clock, world.core.on_action(button(card, "Approve"), ALICE, world.surface, card.id)
    )
    assert note == "Approved."
    await world.finish()
    [result] = await world.results()
    assert result.startswith("summary (") and result.endswith("): A one-line summary.")
    sampled = world.model.requests[1]
    assert sampled.system == "Summarise in one line." and not sampled.tools
    assert sampled.max_tokens == 300
    assert [m.text for m in sampled.messages if isinstance(m, UserMessage)] == ["A very long text."]
    after = (await world.core.store.load_session(KEY, world.clock.now())).usage.total
    assert after - before >= used.total


async def test_a_denied_sampling_request_is_an_error_for_the_server(make_world: Any) -> None:
    world = await make_world()
    world.start(
        "summarise", step(call("asking__summarise", {"text": "x"})), text("It was refused.")
    )
    await world.approve()
    card = await approval_card(world, "asking__sampling")
    note = await drive(
        world.clock, world.core.on_action(button(card, "Deny"), ALICE, world.surface, card.id)
    )
    assert note == "Denied."
    await world.finish()
    [result] = await world.results()
    assert result.startswith("sampling refused:") and "not approved" in result
    assert len(world.model.requests) == 2  # the call, then the answer: the model never sampled


async def test_sampling_is_refused_where_the_server_may_not_sample(make_world: Any) -> None:
    world = await make_world(sampling_max_tokens=0)
    world.start("summarise", step(call("asking__summarise", {"text": "x"})), text("No."))
    await world.approve()
    await world.finish()
    [result] = await world.results()
    assert "sampling is off for this server (sampling_max_tokens = 0)" in result


async def test_a_form_asked_during_a_sub_agents_call_shows_in_the_thread(
    make_world: Any,
) -> None:
    world = await make_world()
    world.start(
        "book it",
        step(call("delegate_task", {"task": "Book a seat.", "tools": ["asking__book"]})),
        step(call("asking__book", {})),
        text("The sub-agent booked it."),
        text("Booked."),
    )
    await world.approve()
    card = await world.card()
    assert "asks Alice to fill in a form" in card.text
    sent = await world.core.answer_form(
        form_id(card), ALICE, {"name": "Ann", "seats": "1"}, world.surface
    )
    assert sent.done
    await world.finish()
    assert world.surface.texts()[-1].endswith("Booked.")


async def test_a_waiting_form_is_kept_for_a_restart_to_close_and_forgotten_once_answered(
    make_world: Any,
) -> None:
    world = await make_world()
    world.start("book it", step(call("asking__book", {})), text("Booked."))
    await world.approve()
    card = await world.card()
    stored = await world.core.store.load_session(KEY, world.clock.now())
    [live] = [m for m in stored.live_messages if m.message_id == card.id]
    assert live.text is not None and "Closed" in live.text  # what a restart leaves it showing
    await world.core.answer_form(form_id(card), ALICE, {"name": "Ann", "seats": "1"}, None)
    stored = await world.core.store.load_session(KEY, world.clock.now())
    assert all(m.message_id != card.id for m in stored.live_messages)
    await world.finish()
