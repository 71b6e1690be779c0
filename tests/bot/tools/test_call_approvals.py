"""Approvals decided per call: a tool that says, from a call's arguments, whether it asks and
what an "Always allow" made on it covers (a domain rather than the whole tool)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bot.tools import Tool, ToolContext, tool
from bot.tools.base import Approval
from tests.bot.tools.world import ALICE, BOB, World
from tests.fakes.scripted_model import call, step, text

ALLOWED = {"docs.example"}


def visit_tool(ran: list[str]) -> Tool:
    @tool(side_effects=True, approval="ask")
    async def visit(ctx: ToolContext, domain: str) -> str:
        """Visit a domain.

        Args:
            domain: Where.
        """
        ran.append(domain)
        return f"visited {domain}"

    def approval_for(args: BaseModel) -> Approval | None:
        return "never" if getattr(args, "domain", "") in ALLOWED else None

    def subject(args: BaseModel) -> str | None:
        return str(getattr(args, "domain", "")) or None

    return dataclasses.replace(visit, approval_for=approval_for, rule_subject=subject)


def visits(*domains: str) -> list[Any]:
    steps: list[Any] = []
    for domain in domains:
        steps += [step(call("visit", {"domain": domain})), text(f"done {domain}")]
    return steps


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    ran: list[str] = []
    w = await World(tmp_path, [visit_tool(ran)]).start()
    w.ran = ran  # type: ignore[attr-defined]
    yield w
    await w.core.aclose()


async def test_a_call_the_tool_lets_through_runs_without_a_card(world: World) -> None:
    world.model.steps = visits("docs.example")
    await world.say("read the docs")
    assert world.ran == ["docs.example"] and world.cards("visit") == []  # type: ignore[attr-defined]


async def test_always_allow_covers_the_domain_of_the_call_not_the_tool(world: World) -> None:
    world.model.steps = visits("news.example")
    await world.say("read the news")
    [card] = world.cards("visit")
    labels = [b.label for b in card.buttons]
    assert labels == [
        "Approve",
        "Deny",
        "Always allow this exact call",
        "Always allow news.example for Alice here",
    ]
    await world.restart()  # what the button covers is kept with the request
    assert await world.click(card, "Always allow news.example for Alice here") == "Approved."
    [rule] = await world.core.store.allow_rules()
    assert rule.tool == "visit:news.example" and rule.covers == {ALICE.id}

    world.model.steps = visits("news.example", "other.example")
    await world.say("again")
    assert world.ran == ["news.example", "news.example"]  # type: ignore[attr-defined]
    await world.say("and elsewhere")
    assert len(world.cards("visit")) == 2  # another domain asks again
    assert world.ran == ["news.example", "news.example"]  # type: ignore[attr-defined]
    await world.click(world.cards("visit")[1], "Deny")

    world.model.steps = visits("news.example")
    await world.say("Bob here", author=BOB)
    assert len(world.cards("visit")) == 3  # the rule covers Alice only


async def test_an_approval_set_in_the_configuration_wins_over_the_tools_own_say(
    tmp_path: Path,
) -> None:
    ran: list[str] = []
    world = await World(
        tmp_path, [visit_tool(ran)], tools={"visit": {"approval": "always"}}
    ).start()
    try:
        world.model.steps = visits("docs.example")
        await world.say("read the docs")
        [card] = world.cards("visit")
        assert [b.label for b in card.buttons] == ["Approve", "Deny"] and ran == []
    finally:
        await world.core.aclose()


async def test_a_tool_without_a_subject_keeps_rules_for_the_whole_tool(tmp_path: Path) -> None:
    ran: list[str] = []

    @tool(side_effects=True)
    async def deploy(ctx: ToolContext, target: str) -> str:
        """Deploy.

        Args:
            target: Where to.
        """
        ran.append(target)
        return "ok"

    world = await World(tmp_path, [deploy]).start()
    try:
        world.model.steps = [
            step(call("deploy", {"target": "a"})),
            text("a"),
            step(call("deploy", {"target": "b"})),
            text("b"),
        ]
        await world.say("ship a")
        [card] = world.cards("deploy")
        await world.click(card, "Always allow for Alice here")
        await world.say("ship b")
        [rule] = await world.core.store.allow_rules()
        assert rule.tool == "deploy" and ran == ["a", "b"]
    finally:
        await world.core.aclose()
