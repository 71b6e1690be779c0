"""Approvals through the core: cards, who may decide, exactly-once decisions, expiry, restarts,
steering and stop — with a scripted model, a recording surface and the real SQLite store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.approvals.models import ApprovalStatus, Choice
from bot.clock import ManualClock
from bot.config import Settings
from bot.conversation import Author, Inbound, ThreadKey
from bot.core import Core
from bot.llm.messages import AssistantMessage, ToolResult, UserMessage
from bot.llm.model import ModelRequest, TextPiece
from bot.sessions.model import RunState
from bot.storage.sqlite import SqliteStore
from bot.tools import ToolContext, ToolRegistry, tool
from bot.tools.builtin import builtin_tools
from tests.fakes.scripted_model import ScriptedModel, Step, call, step, text
from tests.fakes.surface import RecordingSurface, drive, run_until

KEY = ThreadKey("slack:T1:C1:100.1")
ALICE = Author(id="slack:U1", display_name="Alice")
BOB = Author(id="slack:U2", display_name="Bob", roles=frozenset({"slack:group:ops"}))
CAROL = Author(id="slack:U3", display_name="Carol")


class World:
    def __init__(self, tmp_path: Path, **settings: Any) -> None:
        self.clock = ManualClock(start=1_000_000.0)
        self.model = ScriptedModel([])
        self.settings = Settings(data_dir=tmp_path, **settings)
        self.surface = RecordingSurface(self.clock, thread_key=KEY)
        self.ran: list[str] = []
        ran = self.ran

        @tool(side_effects=True)
        async def deploy(ctx: ToolContext, target: str) -> str:
            """Deploy the service.

            Args:
                target: Where to.
            """
            ran.append(target)
            return f"deployed to {target}"

        self.tools = [*builtin_tools(), deploy]
        self.core = self._core()
        self._n = 0

    def _core(self) -> Core:
        store = SqliteStore(self.settings.database_path)
        core = Core(self.settings, store, self.model, ToolRegistry(self.tools), self.clock)
        core.register_surfaces("slack:", lambda key: self.surface, lambda key: key.rsplit(":", 1)[0])
        return core

    async def restart(self) -> None:
        await self.core.aclose()
        self.core = self._core()
        await self.core.start()

    async def say(self, words: str, author: Author = ALICE) -> None:
        self._n += 1
        inbound = Inbound(KEY, author, words, f"ev{self._n}")
        await drive(self.clock, self.core.handle(inbound, self.surface))

    async def click(self, label: str, who: Author, card: int = -1, tool: str = "deploy") -> str | None:
        clicked = self.cards(tool)[card]
        button = next(b for b in clicked.buttons if b.label == label)
        note = await drive(
            self.clock, self.core.on_action(button.action_id, who, self.surface, clicked.id)
        )
        await drive(self.clock, self.core.wait_idle())
        return note

    def cards(self, tool: str = "deploy") -> list[Any]:
        return [m for m in self.surface.live() if f"`{tool}`" in m.text]

    async def session(self) -> Any:
        return await self.core.store.load_session(KEY, self.clock.now())


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    w = World(tmp_path)
    await w.core.start()
    yield w
    await w.core.aclose()


def deploy_then(answer: str, target: str = "prod") -> list[Step]:
    return [step(call("deploy", {"target": target}, say="Deploying now.")), text(answer)]


async def test_a_call_that_needs_approval_pauses_the_run_with_a_card(world: World) -> None:
    world.model.steps = deploy_then("done")
    await world.say("ship it")
    [card] = world.cards()
    assert "Approval needed" in card.text and '"target": "prod"' in card.text
    assert [b.label for b in card.buttons] == ["Approve", "Deny", "Always allow here"]
    assert world.ran == [] and len(world.model.requests) == 1
    session = await world.session()
    assert session.state is RunState.AWAITING_APPROVAL
    assert world.surface.texts()[0] == "Deploying now."  # the reply landed above the card


async def test_approve_runs_the_tool_and_the_run_goes_on(world: World) -> None:
    world.model.steps = deploy_then("Deployed!")
    await world.say("ship it")
    assert await world.click("Approve", ALICE) == "Approved."
    assert world.ran == ["prod"]
    [card] = world.cards()
    assert "Approved** by Alice" in card.text and card.buttons == ()
    assert world.surface.texts()[-1] == "Deployed!"
    session = await world.session()
    result = next(m for m in session.messages if isinstance(m, ToolResult))
    assert result.content == "deployed to prod" and not result.is_error
    assert session.state is RunState.IDLE


async def test_a_card_whose_id_was_not_stored_is_updated_from_the_click(world: World) -> None:
    world.model.steps = deploy_then("Deployed!")
    await world.say("ship it")
    async with world.core.store.transaction() as db:  # killed between posting it and storing its id
        await db.execute("UPDATE approvals SET card_id = NULL")
    await world.restart()
    assert await world.click("Approve", ALICE) == "Approved."
    [card] = world.cards()
    assert "Approved** by Alice" in card.text and card.buttons == ()
    assert world.ran == ["prod"] and world.surface.texts()[-1] == "Deployed!"


async def test_deny_tells_the_model_who_denied(world: World) -> None:
    world.model.steps = deploy_then("OK, not deploying.")
    await world.say("ship it")
    assert await world.click("Deny", ALICE) == "Denied."
    assert world.ran == []
    result = world.model.requests[-1].messages[-1]
    assert isinstance(result, ToolResult) and result.content.startswith("denied by Alice")
    assert "Denied** by Alice" in world.cards()[0].text


async def test_only_the_requester_may_decide_by_default(world: World) -> None:
    world.model.steps = deploy_then("done")
    await world.say("ship it")
    note = await world.click("Approve", BOB)
    assert note is not None and "isn't yours to decide" in note
    assert world.ran == [] and (await world.session()).state is RunState.AWAITING_APPROVAL
    assert world.cards()[0].buttons  # still pending


@pytest.mark.parametrize(
    ("approvers", "allowed", "refused"),
    [
        ({"users": ["slack:U3"], "requester": False}, CAROL, ALICE),
        ({"roles": ["slack:group:ops"], "requester": False}, BOB, CAROL),
        ({"anyone": True}, CAROL, None),
    ],
)
async def test_approvers_are_configurable_per_tool(
    tmp_path: Path, approvers: dict[str, Any], allowed: Author, refused: Author | None
) -> None:
    world = World(tmp_path, tools={"deploy": {"approvers": approvers}})
    await world.core.start()
    try:
        world.model.steps = deploy_then("done")
        await world.say("ship it")
        if refused is not None:
            assert "isn't yours" in (await world.click("Approve", refused) or "")
        assert await world.click("Approve", allowed) == "Approved."
        assert world.ran == ["prod"]
    finally:
        await world.core.aclose()


async def test_per_channel_configuration_overrides(tmp_path: Path) -> None:
    world = World(tmp_path, channels={"slack:T1:C1": {"tools": {"deploy": {"approval": "never"}}}})
    await world.core.start()
    try:
        world.model.steps = deploy_then("done")
        await world.say("ship it")
        assert world.ran == ["prod"] and world.cards() == []
    finally:
        await world.core.aclose()


async def test_a_channel_can_ask_before_a_tool_without_side_effects(tmp_path: Path) -> None:
    world = World(tmp_path, channels={"slack:T1:C1": {"tools": {"todo_write": {"approval": "always"}}}})
    await world.core.start()
    try:
        todos = {"todos": [{"content": "plan", "status": "pending"}]}
        world.model.steps = [step(call("todo_write", todos)), text("planned")]
        await world.say("make a plan")
        assert len(world.cards("todo_write")) == 1
        assert (await world.session()).todos == ()
        assert await world.click("Approve", ALICE, tool="todo_write") == "Approved."
        session = await world.session()
        assert [t.content for t in session.todos] == ["plan"]
        assert session.messages[-1].text == "planned"
    finally:
        await world.core.aclose()


async def test_a_second_click_and_a_forged_id_change_nothing(world: World) -> None:
    world.model.steps = deploy_then("done")
    await world.say("ship it")
    card = world.cards()[0]
    approve = next(b for b in card.buttons if b.label == "Approve").action_id
    deny = next(b for b in card.buttons if b.label == "Deny").action_id
    first, second = await asyncio.gather(
        world.core.on_action(approve, ALICE, world.surface),
        world.core.on_action(deny, ALICE, world.surface),
    )
    await drive(world.clock, world.core.wait_idle())
    assert sorted([first or "", second or ""])[0] in {"Approved.", "Denied."}
    assert "already" in (first or "") + (second or "")
    again = await world.core.on_action(approve, ALICE, world.surface)
    assert again is not None and "already" in again
    assert "unknown" in (await world.core.on_action("approve:forged-id", ALICE, world.surface) or "")
    assert len(world.ran) <= 1 and len(world.model.requests) == 2


async def test_an_unanswered_request_expires_and_the_model_is_told(world: World) -> None:
    world.model.steps = deploy_then("It expired, so I did nothing.")
    await world.say("ship it")
    await world.clock.advance(world.settings.approval_ttl_s + 1)
    assert await world.core.scheduler.run_due() >= 1
    await drive(world.clock, world.core.wait_idle())
    assert "Expired" in world.cards()[0].text and world.cards()[0].buttons == ()
    result = world.model.requests[-1].messages[-1]
    assert isinstance(result, ToolResult) and result.content.startswith("expired")
    assert world.ran == []
    request = next(iter((await world.core.store.approvals_for(KEY, [result.call_id])).values()))
    assert request.status is ApprovalStatus.EXPIRED
    assert "expired" in (await world.core.decide(request.id, ALICE, Choice.APPROVE, world.surface))


async def test_a_restart_between_card_and_click_loses_nothing(world: World) -> None:
    world.model.steps = deploy_then("Deployed after the restart.")
    await world.say("ship it")
    await world.restart()
    assert await world.click("Approve", ALICE) == "Approved."
    assert world.ran == ["prod"]
    assert world.surface.texts()[-1] == "Deployed after the restart."
    assert (await world.session()).state is RunState.IDLE


async def test_several_calls_in_one_batch_each_wait_for_their_decision(world: World) -> None:
    world.model.steps = [
        step(call("deploy", {"target": "eu"}, index=0, provider_id="a"),
             call("todo_write", {"todos": [{"content": "check"}]}, index=1, provider_id="b"),
             call("deploy", {"target": "us"}, index=2, provider_id="c")),
        text("both handled"),
    ]
    await world.say("ship both")
    assert len(world.cards()) == 2
    assert await world.click("Approve", ALICE, card=1) == "Approved."
    assert world.ran == [] and len(world.model.requests) == 1  # the first still waits
    assert await world.click("Deny", ALICE, card=0) == "Denied."
    assert world.ran == ["us"]
    session = await world.session()
    results = {m.content.split(":")[0] for m in session.messages if isinstance(m, ToolResult)}
    assert {"denied by Alice", "deployed to us"} <= results
    assert session.todos[0].content == "check"  # the call held behind the first ran too
    assert world.surface.texts()[-1] == "both handled"


async def test_always_allow_here_stops_asking_in_this_channel(world: World) -> None:
    world.model.steps = [*deploy_then("first"), *deploy_then("second", "staging")]
    await world.say("ship it")
    assert await world.click("Always allow here", ALICE) == "Approved."
    await world.say("and staging")
    assert world.ran == ["prod", "staging"] and len(world.cards()) == 1


async def test_a_message_while_waiting_is_kept_for_after_the_decision(world: World) -> None:
    world.model.steps = deploy_then("done")
    await world.say("ship it")
    await world.say("also, say hi to Bob", BOB)
    assert "once the approval above is decided" in world.surface.visible_text()
    assert len(world.model.requests) == 1
    await world.click("Approve", ALICE)
    sent = world.model.requests[-1].messages
    assert isinstance(sent[-1], UserMessage) and sent[-1].text == "also, say hi to Bob"
    assert isinstance(sent[-2], ToolResult)


async def test_steering_a_running_turn_and_stopping_it(world: World) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    class SlowModel(ScriptedModel):
        async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:  # type: ignore[override]
            self.requests.append(request)
            yield TextPiece("Thinking about it")
            started.set()
            await release.wait()
            yield TextPiece(" ... never shown")

    world.core.engine._model = SlowModel([])  # the engine's model, as Core.create would set it
    task = asyncio.create_task(world.core.handle(Inbound(KEY, ALICE, "long job", "e1"), world.surface))
    await asyncio.wait_for(started.wait(), 5)
    await world.core.handle(Inbound(KEY, BOB, "stop please", "e2"), world.surface)
    session = world.core.runner.active[KEY].session
    assert [m.text for m in session.inbox] == ["stop please"]
    assert await world.core.stop(KEY, BOB)
    await run_until(world.clock, task.done)
    await task
    stored = await world.session()
    partial = next(m for m in stored.messages if isinstance(m, AssistantMessage))
    assert partial.stopped and partial.text == "Thinking about it"
    assert "Stopped by Bob" in world.surface.visible_text()
    assert not await world.core.stop(KEY, BOB)
    # the next message starts normally; the steered message was kept and is read first
    world.core.engine._model = world.model
    world.model.steps = [text("fresh start")]
    await world.say("next")
    texts = [m.text for m in world.model.requests[-1].messages if isinstance(m, UserMessage)]
    assert texts[-2:] == ["stop please", "next"]
    assert world.surface.texts()[-1] == "fresh start"


async def test_the_stop_button_on_the_running_reply_stops_it(world: World) -> None:
    started = asyncio.Event()

    class HangingModel(ScriptedModel):
        async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:  # type: ignore[override]
            yield TextPiece("Working on a long answer")
            started.set()
            await asyncio.Event().wait()
            yield TextPiece("never")

    world.core.engine._model = HangingModel([])
    task = asyncio.create_task(world.core.handle(Inbound(KEY, ALICE, "go", "s1"), world.surface))
    await asyncio.wait_for(started.wait(), 5)
    await run_until(world.clock, lambda: bool(world.surface.live()) and bool(world.surface.live()[0].buttons))
    [reply] = world.surface.live()
    [stop] = reply.buttons
    assert stop.label == "Stop"
    assert await world.core.on_action(stop.action_id, BOB, world.surface) is None
    await run_until(world.clock, task.done)
    await task
    [reply] = world.surface.live()
    assert reply.buttons == () and reply.text.startswith("Working on a long answer")
    assert "Stopped by Bob" in reply.text
    assert await world.core.on_action(stop.action_id, BOB, world.surface) == "That run has already ended."
    assert (await world.session()).state is RunState.IDLE
