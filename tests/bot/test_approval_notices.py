"""Approvals reach their approvers: the card names who can decide, they are told by a direct
message once (never again after a restart), deny lists and the cap hold, and a request nobody
decides escalates once — through the core, with a recording surface that can reach people."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.api.inbound import Author
from bot.config import Settings
from bot.errors import SurfaceError
from bot.storage.sqlite.store import SqliteStore
from tests.bot.test_approvals import BOB, CAROL, World, deploy_then
from tests.fakes.surface import drive

DAVE = Author(id="slack:U4", display_name="Dave", roles=frozenset({"slack:group:ops"}))
NAMES = {"slack:U2": "Bob", "slack:U3": "Carol", "slack:U4": "Dave", "slack:group:ops": "ops"}


@dataclass
class FakePeople:
    """Who is who, and the direct messages sent (person, text)."""

    groups: dict[str, list[str]] = field(default_factory=dict)
    sent: list[tuple[str, str]] = field(default_factory=list)
    refuse: set[str] = field(default_factory=set)

    async def names(self, ids: Sequence[str]) -> Mapping[str, str]:
        return {i: NAMES[i] for i in ids if i in NAMES}

    async def members(self, role: str, limit: int) -> Sequence[str]:
        return self.groups.get(role, [])[:limit]

    async def link(self, message_id: str) -> str | None:
        return f"https://chat.example/m/{message_id}"

    async def send(self, person: str, markdown: str) -> None:
        if person in self.refuse:
            raise SurfaceError("cannot_dm_bot")
        self.sent.append((person, markdown))

    def told(self) -> list[str]:
        return [p for p, _ in self.sent]


async def started(tmp_path: Path, **settings: Any) -> tuple[World, FakePeople]:
    world = World(tmp_path, **settings)
    people = FakePeople(groups={"slack:group:ops": ["slack:U2", "slack:U4", "slack:U1"]})
    world.surface.people = people  # type: ignore[attr-defined]
    await world.core.start()
    return world, people


async def due(world: World) -> None:
    await world.core.scheduler.run_due()
    await drive(world.clock, world.core.wait_idle())


def approvers(**given: Any) -> dict[str, Any]:
    return {"deploy": {"approvers": {"requester": False, **given}}}


async def test_the_approvers_are_named_on_the_card_and_told_once(tmp_path: Path) -> None:
    world, people = await started(tmp_path, tools=approvers(users=["slack:U2", "slack:U3"]))
    try:
        world.model.steps = deploy_then("Deployed.")
        await world.say("ship it")
        card = world.cards()[0]
        assert "Who can decide: Bob or Carol." in card.text
        await due(world)
        assert sorted(people.told()) == ["slack:U2", "slack:U3"]
        text = people.sent[0][1]
        assert "Alice asks Threadline to run `deploy`" in text
        assert f"(https://chat.example/m/{card.id})" in text
        await due(world)
        await world.restart()
        world.surface.people = people  # type: ignore[attr-defined]
        await due(world)
        assert len(people.sent) == 2  # never again
        trail = await world.core.store.audit_trail()
        assert [e.detail for e in trail if e.event == "notified"] == ["approvers"]
        assert await world.click("Approve", BOB) == "Approved."
        assert world.ran == ["prod"]
    finally:
        await world.core.aclose()


async def test_nobody_is_told_when_the_requester_may_decide(tmp_path: Path) -> None:
    tools = {"deploy": {"approvers": {"users": ["slack:U2"]}}}
    world, people = await started(tmp_path, tools=tools)
    try:
        world.model.steps = deploy_then("Deployed.")
        await world.say("ship it")
        assert "Who can decide: the person who asked or Bob." in world.cards()[0].text
        await due(world)
        assert people.sent == []
    finally:
        await world.core.aclose()


async def test_group_members_are_told_within_the_cap_and_deny_lists(tmp_path: Path) -> None:
    world, people = await started(
        tmp_path,
        tools=approvers(roles=["slack:group:ops"], users=["slack:U3"]),
        access={"deny_users": ["slack:U4"]},
        approval_notify_max=2,
    )
    people.refuse.add("slack:U3")
    try:
        world.model.steps = deploy_then("Deployed.")
        await world.say("ship it")
        assert "Who can decide: Carol or members of ops." in world.cards()[0].text
        await due(world)
        # Carol first (refused by the platform), then Bob; Dave is denied, Alice asked
        assert people.told() == ["slack:U2"]
    finally:
        await world.core.aclose()


async def test_an_undecided_request_escalates_once(tmp_path: Path) -> None:
    tools = approvers(users=["slack:U2"], escalate_to=["slack:U3"], escalate_after="10m")
    world, people = await started(tmp_path, tools=tools)
    try:
        world.model.steps = deploy_then("Deployed.")
        await world.say("ship it")
        assert "can decide too" in world.cards()[0].text and "Carol" in world.cards()[0].text
        await due(world)
        assert people.told() == ["slack:U2"]
        early = await world.click("Approve", CAROL)
        assert early is not None and "isn't yours" in early and world.ran == []
        await world.clock.advance(601)
        await due(world)
        assert people.told() == ["slack:U2", "slack:U3"]
        assert "you can now approve or deny it" in people.sent[-1][1]
        assert "Nobody decided in time: Carol can decide too (1 told" in world.cards()[0].text
        await world.restart()
        world.surface.people = people  # type: ignore[attr-defined]
        await due(world)
        assert len(people.sent) == 2
        assert await world.click("Approve", CAROL) == "Approved."
        assert world.ran == ["prod"]
    finally:
        await world.core.aclose()


async def test_an_escalated_request_still_expires(tmp_path: Path) -> None:
    tools = approvers(users=["slack:U2"], escalate_to=["slack:group:ops"], escalate_after=60)
    world, people = await started(tmp_path, tools=tools)
    try:
        world.model.steps = deploy_then("It expired.")
        await world.say("ship it")
        await world.clock.advance(61)
        await due(world)
        assert people.told() == ["slack:U2", "slack:U4"]  # Bob, an approver, is not told twice
        await world.clock.advance(world.settings.approval_ttl_s)
        await due(world)
        store = world.core.store
        assert isinstance(store, SqliteStore)
        assert "Expired" in world.cards()[0].text
        trail = [e for e in await store.audit_trail() if e.event == "expired"]
        assert len(trail) == 1
        assert world.ran == []
    finally:
        await world.core.aclose()


def test_escalation_needs_both_settings() -> None:
    with pytest.raises(ValueError, match="escalate_to and escalate_after go together"):
        Settings.model_validate(approvers_only(escalate_to=["slack:U3"]))
    found = Settings.model_validate(approvers_only(escalate_to=["slack:U3"], escalate_after="2h"))
    assert found.tools["deploy"].approvers is not None
    assert found.tools["deploy"].approvers.escalate_after == 7200.0


def approvers_only(**given: Any) -> dict[str, Any]:
    return {"tools": approvers(**given)}


async def test_a_role_whose_members_are_unknown_leaves_the_users_told(tmp_path: Path) -> None:
    world, people = await started(
        tmp_path, tools=approvers(users=["slack:U3"], roles=["slack:group:gone"])
    )

    async def refused(role: str, limit: int) -> Sequence[str]:
        raise SurfaceError("missing_scope")

    people.members = refused  # type: ignore[method-assign]
    try:
        world.model.steps = deploy_then("Deployed.")
        await world.say("ship it")
        await due(world)
        assert people.told() == ["slack:U3"]
    finally:
        await world.core.aclose()
