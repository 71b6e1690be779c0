"""Toolkits that offer tools under their own names (``cancel_schedule``, without the toolkit's
prefix): offered per thread like any toolkit's, and no name can be taken twice."""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import pytest

from bot.tools import ToolContext, ToolRegistry, tool
from bot.tools.base import Tool
from bot.tools.toolkit import State


@tool
async def cancel_thing(ctx: ToolContext) -> str:
    """Cancel the thing."""
    return "cancelled"


class Things:
    name = "builtin.things"

    def __init__(self) -> None:
        self.where: set[str] = set()

    def version(self, key: str | None, state: State) -> Hashable:
        return key in self.where

    def tools(self, key: str | None, state: State) -> Mapping[str, Tool]:
        return {"cancel_thing": cancel_thing} if key is None or key in self.where else {}

    def missing(self, key: str | None, name: str, state: State) -> str:
        return "there is no thing here to cancel."


async def test_a_bare_toolkit_offers_its_tools_under_their_own_names_where_it_decides() -> None:
    things = Things()
    registry = ToolRegistry()
    registry.attach(things, own=["cancel_thing"])
    things.where.add("t1")
    assert [s.name for s in registry.specs("t1")] == ["cancel_thing"]
    assert registry.specs("t2") == ()
    assert registry.get("cancel_thing", "t1") is cancel_thing
    stand_in = registry.get("cancel_thing", "t2")
    assert stand_in is not None and stand_in.description == "there is no thing here to cancel."
    assert registry.names == ["cancel_thing"]


def test_a_name_is_never_taken_twice() -> None:
    registry = ToolRegistry([cancel_thing])
    with pytest.raises(ValueError, match="the tool name 'cancel_thing' is taken"):
        registry.attach(Things(), own=["cancel_thing"])
    other = ToolRegistry()
    other.attach(Things(), own=["cancel_thing"])
    with pytest.raises(ValueError, match="'cancel_thing' is already registered"):
        other.add(cancel_thing)
    with pytest.raises(ValueError, match="taken"):
        other.attach(Things())
