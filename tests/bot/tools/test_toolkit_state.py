"""Toolkits with state: a per-thread state saved with the session, the tools offered following
it, parameter values taken from it, and calls of one batch seeing each other's changes."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

import pytest

from bot.sessions.model import Session
from bot.tools import Tool, ToolContext, ToolRegistry
from bot.tools.base import AnyArguments, ToolError
from bot.tools.state import MAX_STATE_CHARS, set_state, state
from bot.tools.toolkit import State
from tests.bot.tools.world import KEY, World
from tests.fakes.scripted_model import call, step, text


class Rooms:
    """``rooms__build(name)`` adds a room; ``rooms__enter(room)`` takes one of the rooms built
    in this thread (an enum), and is offered only once there is one."""

    name = "rooms"

    def __init__(self) -> None:
        self.built = 0

    def version(self, key: str | None, state: State) -> Hashable:
        return tuple(state.get("rooms", ()))

    def tools(self, key: str | None, state: State) -> Mapping[str, Tool]:
        self.built += 1
        rooms = list(state.get("rooms", ()))
        found = {"rooms__build": self._build()}
        if rooms:
            schema = {
                "type": "object",
                "properties": {"room": {"type": "string", "enum": rooms}},
                "required": ["room"],
            }
            found["rooms__enter"] = Tool(
                "rooms__enter", "Enter a room.", AnyArguments, self._enter, schema=schema
            )
        return found

    def missing(self, key: str | None, name: str, state: State) -> str:
        return f"{name} is not offered: no room has been built in this thread yet"

    def instructions(self, state: State) -> str:
        rooms = state.get("rooms", ())
        return f"Rooms built here: {', '.join(rooms)}." if rooms else ""

    def status(self, state: State) -> list[str]:
        return [f"Rooms: {len(state.get('rooms', ()))}"]

    def _build(self) -> Tool:
        async def build(ctx: ToolContext, **arguments: Any) -> str:
            rooms = [*state(ctx.session, "rooms").get("rooms", ()), str(arguments["name"])]
            set_state(ctx.session, "rooms", {"rooms": rooms})
            return f"built {arguments['name']}"

        schema = {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        }
        return Tool("rooms__build", "Build a room.", AnyArguments, build, schema=schema)

    @staticmethod
    async def _enter(ctx: ToolContext, **arguments: Any) -> str:
        if arguments.get("room") not in state(ctx.session, "rooms").get("rooms", ()):
            raise ToolError(f"no room {arguments.get('room')!r}")
        return f"entered {arguments['room']}"


def offered(request: Any) -> dict[str, Any]:
    return {t.name: t.parameters for t in request.tools if t.name.startswith("rooms__")}


@pytest.fixture
async def world(tmp_path: Path) -> Any:
    w = await World(tmp_path, toolkits=[(Rooms(), ())]).start()
    yield w
    await w.core.aclose()


async def test_tools_and_their_values_follow_the_threads_state(world: World) -> None:
    world.model.steps = [
        step(call("rooms__enter", {"room": "hall"})),  # not offered yet: a clear error
        step(
            call("rooms__build", {"name": "hall"}, index=0, provider_id="a"),
            call("rooms__enter", {"room": "hall"}, index=1, provider_id="b"),
        ),  # sees the change
        text("Built and entered."),
    ]
    await world.say("build a hall")
    first, second, third = world.model.requests
    assert set(offered(first)) == {"rooms__build"} and "Rooms built" not in first.system
    assert "no room has been built in this thread yet" in second.messages[-1].content
    assert offered(third)["rooms__enter"]["properties"]["room"]["enum"] == ["hall"]
    assert third.system.endswith("Rooms built here: hall.")
    assert [m.content for m in third.messages[-2:]] == ["built hall", "entered hall"]

    await world.restart()  # the state was saved with the session
    assert (await world.session()).toolkits == {"rooms": {"rooms": ["hall"]}}
    world.model.steps = [text("Still here.")]
    await world.say("where are we?")
    assert offered(world.model.requests[-1])["rooms__enter"]["properties"]["room"]["enum"] == [
        "hall"
    ]
    assert "Rooms: 1" in await world.core.describe(KEY)


async def test_a_reset_forgets_the_state(world: World) -> None:
    world.model.steps = [step(call("rooms__build", {"name": "attic"})), text("ok"), text("fresh")]
    await world.say("build an attic")
    await world.core.reset(KEY, world.surface)
    assert (await world.session()).toolkits == {}
    await world.say("hello again")
    assert set(offered(world.model.requests[-1])) == {"rooms__build"}


def test_what_is_offered_is_computed_once_per_state() -> None:
    rooms = Rooms()
    registry = ToolRegistry()
    registry.attach(rooms)
    a, b = Session(key=KEY), Session(key=KEY)
    set_state(a, "rooms", {"rooms": ["x"]})
    set_state(b, "rooms", {"rooms": ["x"]})
    first = registry.specs(KEY, a)
    assert registry.specs(KEY, b) is first and registry.specs(KEY, a) is first
    assert rooms.built == 1
    assert [s.name for s in registry.specs(KEY, None)] == ["rooms__build"]
    assert registry.get("rooms__enter", KEY, a) is not None


def test_a_state_must_be_small_json() -> None:
    session = Session(key=KEY)
    with pytest.raises(ValueError, match="must be JSON"):
        set_state(session, "rooms", {"when": object()})
    with pytest.raises(ValueError, match="at most"):
        set_state(session, "rooms", {"big": "x" * MAX_STATE_CHARS})
    assert session.toolkits == {}
    set_state(session, "rooms", {"rooms": ["a"]})
    set_state(session, "rooms", {})
    assert session.toolkits == {}
