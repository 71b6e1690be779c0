"""``delegate_task`` through the core: a sub-agent's answer, tools, limits, approvals asked in the
thread and waited for inline, progress, usage, concurrency, bad arguments and a restart in the
middle — with a scripted model, a recording surface and the real SQLite store."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.api.inbound import Author, Inbound, ThreadKey
from bot.approvals import inline_waits as asking
from bot.approvals.models import ApprovalStatus
from bot.config import Settings
from bot.core import Core
from bot.delegate.tool import SUB_AGENT_PROMPT
from bot.infra.clock import ManualClock, sleep_until_set
from bot.llm.messages import ToolResult, Usage, UserMessage
from bot.llm.model import ModelRequest
from bot.sessions.model import RunState, Session
from bot.storage.sqlite.store import SqliteStore
from bot.thread.recovery import INTERRUPTED
from bot.tools import ToolContext, ToolRegistry, tool
from bot.tools.builtin import builtin_tools
from tests.fakes.scripted_model import ScriptedModel, Step, call, step, text
from tests.fakes.surface import FakeMessage, RecordingSurface, drive, run_until

KEY = ThreadKey("slack:T1:C1:100.1")
ALICE = Author(id="slack:U1", display_name="Alice")
BOB = Author(id="slack:U2", display_name="Bob")


class World:
    def __init__(self, tmp_path: Path, **settings: Any) -> None:
        self.clock = ManualClock(start=1_000_000.0)
        self.model = ScriptedModel([])
        self.settings = Settings(data_dir=tmp_path, **settings)
        self.surface = RecordingSurface(self.clock, thread_key=KEY)
        self.ran: list[str] = []
        self.release = asyncio.Event()
        """Set by a test to let a held ``lookup`` answer."""
        self.hold = False
        ran, world = self.ran, self

        @tool(side_effects=True)
        async def deploy(ctx: ToolContext, target: str) -> str:
            """Deploy the service.

            Args:
                target: Where to.
            """
            ran.append(target)
            return f"deployed to {target}"

        @tool
        async def lookup(ctx: ToolContext, what: str) -> str:
            """Look something up.

            Args:
                what: What to look up.
            """
            if world.hold:
                assert await sleep_until_set(world.clock, 60.0, world.release), "never released"
            return f"{what} is 42"

        self.tools = [*builtin_tools(), deploy, lookup]
        self.core = self._core()
        self._n = 0

    def _core(self, clock: ManualClock | None = None) -> Core:
        store = SqliteStore(self.settings.database_path)
        core = Core(self.settings, store, self.model, ToolRegistry(self.tools), clock or self.clock)
        core.register_surfaces(
            "slack:", lambda key: self.surface, lambda key: key.rsplit(":", 1)[0]
        )
        return core

    def inbound(self, words: str, author: Author = ALICE) -> Inbound:
        self._n += 1
        return Inbound(KEY, author, words, f"ev{self._n}")

    async def say(self, words: str, author: Author = ALICE) -> None:
        await drive(self.clock, self.core.handle(self.inbound(words, author), self.surface))

    def cards(self) -> list[FakeMessage]:
        return [m for m in self.surface.live() if "`deploy`" in m.text and "▸ `" not in m.text]

    async def click(self, label: str, who: Author = ALICE) -> str | None:
        card = [c for c in self.cards() if c.buttons][-1]
        button = next(b for b in card.buttons if b.label == label)
        return await self.core.on_action(button.action_id, who, self.surface, card.id)

    async def session(self) -> Session:
        return await self.core.store.load_session(KEY, self.clock.now())

    async def results(self) -> list[ToolResult]:
        return [m for m in (await self.session()).messages if isinstance(m, ToolResult)]


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    w = World(tmp_path)
    await w.core.start()
    yield w
    await w.core.aclose()


def delegate(task: str, tools: list[str], *, index: int = 0) -> list[Any]:
    return call(
        "delegate_task", {"task": task, "tools": tools}, index=index, provider_id=f"call_d{index}"
    )


def is_sub(request: ModelRequest) -> bool:
    return request.system.startswith(SUB_AGENT_PROMPT)


def shown(world: World) -> str:
    return "\n".join(world.surface.texts())


async def test_a_sub_agent_answers_with_its_final_text(world: World) -> None:
    world.model.steps = [
        step(delegate("Find the answer to everything.", ["lookup"])),
        step(call("lookup", {"what": "everything"})),
        text("Everything is 42."),
        text("The sub-agent says: 42."),
    ]
    await world.say("What is the answer?")
    parent, first, second, last = world.model.requests
    assert is_sub(first) and is_sub(second) and not is_sub(parent) and not is_sub(last)
    assert [t.name for t in first.tools] == ["lookup"]  # only what it was given
    assert "delegate_task" in [t.name for t in parent.tools]
    task = first.messages[0]
    assert isinstance(task, UserMessage) and task.text == "Find the answer to everything."
    [result] = await world.results()  # the sub-agent's own calls stay in its mini-session
    assert (result.name, result.content, result.is_error) == (
        "delegate_task",
        "Everything is 42.",
        False,
    )
    assert world.surface.texts()[-1].endswith("The sub-agent says: 42.")
    assert "▸ `delegate_task` · Everything is 42." in shown(world)
    session = await world.session()
    assert session.usage.total == 15 + 15 + 11 + 11  # the sub-agent's two calls count too
    assert session.state is RunState.IDLE and asking.RECORD not in session.toolkits


async def test_its_progress_shows_in_the_thread_while_it_works(world: World) -> None:
    world.hold = True
    world.model.steps = [
        step(delegate("Look it up.", ["lookup"])),
        step(call("lookup", {"what": "x"})),
        text("x is 42."),
        text("Done: 42."),
    ]
    work = asyncio.ensure_future(world.core.handle(world.inbound("Look x up"), world.surface))
    try:
        await run_until(
            world.clock,
            lambda: any(
                "working: step 1, lookup" in m.text and m.buttons for m in world.surface.live()
            ),
        )
        [working] = [m for m in world.surface.live() if "working" in m.text]
        assert "▸ `delegate_task` · working: step 1, lookup" in working.text
        assert [b.label for b in working.buttons] == ["Stop"]  # the run can be stopped meanwhile
        world.release.set()
        await drive(world.clock, work)
    finally:
        world.release.set()
    assert world.surface.texts()[-1].endswith("Done: 42.")
    assert "working" not in shown(world)  # the activity goes once the call is done


async def test_a_call_asked_for_inside_a_delegation_is_approved_in_the_thread(world: World) -> None:
    world.model.steps = [
        step(delegate("Ship the service.", ["deploy"])),
        step(call("deploy", {"target": "prod"})),
        text("Shipped to prod."),
        text("It is shipped."),
    ]
    work = asyncio.ensure_future(world.core.handle(world.inbound("ship it"), world.surface))
    await run_until(world.clock, lambda: bool(world.cards()))
    [card] = world.cards()
    assert "Approval needed" in card.text and "Asked by Alice" in card.text and world.ran == []
    assert (await world.session()).state is RunState.RUNNING  # the parent waits, it is not paused
    assert (await world.click("Approve", BOB) or "").startswith("This isn't yours")
    assert await world.click("Approve") == "Approved."
    await drive(world.clock, work)
    await drive(world.clock, world.core.wait_idle())
    assert world.ran == ["prod"]
    [card] = world.cards()
    assert (
        "Approved** by Alice" in card.text
        and "▶ Ran: deployed to prod" in card.text
        and card.buttons == ()
    )
    texts = world.surface.texts()
    assert (
        texts[-1].endswith("It is shipped.") and texts.index(card.text) < len(texts) - 1
    )  # below the card
    assert "waiting for a decision" not in shown(world) and not [
        m for m in world.surface.live() if m.buttons
    ]
    result = next(r for r in await world.results() if r.name == "delegate_task")
    assert result.content == "Shipped to prod."
    session = await world.session()
    assert session.state is RunState.IDLE and asking.RECORD not in session.toolkits


async def test_a_denied_call_inside_a_delegation_never_runs(world: World) -> None:
    world.model.steps = [
        step(delegate("Ship the service.", ["deploy"])),
        step(call("deploy", {"target": "prod"})),
        text("I was not allowed to deploy."),
        text("Not shipped: it was denied."),
    ]
    work = asyncio.ensure_future(world.core.handle(world.inbound("ship it"), world.surface))
    await run_until(world.clock, lambda: bool(world.cards()))
    assert await world.click("Deny") == "Denied."
    await drive(world.clock, work)
    assert world.ran == []
    sub_saw = world.model.requests[2].messages[-1]
    assert isinstance(sub_saw, ToolResult) and sub_saw.content.startswith("denied by Alice")
    assert world.surface.texts()[-1].endswith("Not shipped: it was denied.")


async def test_two_sub_agents_asking_at_once_get_a_card_each(world: World) -> None:
    def respond(request: ModelRequest) -> Step:
        last, task = request.messages[-1], request.messages[0]
        if not is_sub(request):
            if isinstance(last, ToolResult):
                return text("Both are shipped.")
            return step(
                delegate("Ship to eu.", ["deploy"]), delegate("Ship to us.", ["deploy"], index=1)
            )
        if isinstance(last, ToolResult):
            return text(last.content)
        assert isinstance(task, UserMessage)
        return step(call("deploy", {"target": task.text.split()[-1].rstrip(".")}, provider_id="d"))

    world.model.respond = respond
    work = asyncio.ensure_future(world.core.handle(world.inbound("ship both"), world.surface))
    await run_until(world.clock, lambda: len([c for c in world.cards() if c.buttons]) == 2)
    assert world.ran == []
    for _ in range(2):
        assert await world.click("Approve") == "Approved."
    await drive(world.clock, work)
    assert sorted(world.ran) == ["eu", "us"]
    assert [r.content for r in await world.results()] == ["deployed to eu", "deployed to us"]
    assert all("Approved" in c.text and c.buttons == () for c in world.cards())
    assert world.surface.texts()[-1].endswith("Both are shipped.")


async def test_a_request_nobody_decides_expires_and_the_sub_agent_goes_on(tmp_path: Path) -> None:
    world = World(tmp_path, approval_ttl_s=60.0)
    await world.core.start()
    world.model.steps = [
        step(delegate("Ship it.", ["deploy"])),
        step(call("deploy", {"target": "prod"})),
        text("Nobody approved the deploy in time."),
        text("It was not shipped: nobody approved in time."),
    ]
    try:
        await world.say("ship it")  # nobody clicks: the clock runs past the request's expiry
        assert world.ran == []
        [card] = world.cards()
        # The expiry job and the waiting call's own poll fall due at the same instant; when the
        # job wins, the run may go on while the job is still editing the card.
        await run_until(world.clock, lambda: "Expired" in card.text, limit=10.0)
        assert card.buttons == ()
        sub_saw = world.model.requests[2].messages[-1]
        assert isinstance(sub_saw, ToolResult) and sub_saw.content.startswith(
            "expired: nobody approved"
        )
        assert world.surface.texts()[-1].endswith("It was not shipped: nobody approved in time.")
    finally:
        await world.core.aclose()


async def test_a_stop_while_a_delegation_waits_closes_its_card(world: World) -> None:
    world.model.steps = [
        step(delegate("Ship it.", ["deploy"])),
        step(call("deploy", {"target": "prod"})),
    ]
    work = asyncio.ensure_future(world.core.handle(world.inbound("ship it"), world.surface))

    def waiting() -> FakeMessage | None:
        return next(
            (
                m
                for m in world.surface.live()
                if "waiting for a decision on deploy" in m.text and m.buttons
            ),
            None,
        )

    await run_until(world.clock, lambda: waiting() is not None)  # below the card, with Stop
    line = waiting()
    shown_ids = [m.id for m in world.surface.live()]
    assert line is not None and shown_ids.index(world.cards()[0].id) < shown_ids.index(line.id)
    [stop] = line.buttons
    assert stop.label == "Stop"
    assert (
        await drive(
            world.clock, world.core.on_action(stop.action_id, ALICE, world.surface, line.id)
        )
        is None
    )
    await drive(world.clock, work)
    [card] = world.cards()
    assert "Expired" in card.text and "stopped" in card.text and card.buttons == ()
    [result] = await world.results()
    assert result.name == "delegate_task" and result.content.startswith("stopped")
    assert world.ran == [] and asking.RECORD not in (await world.session()).toolkits
    assert "Stopped by Alice." in shown(world) and not [
        m for m in world.surface.live() if m.buttons
    ]


async def test_several_delegations_in_one_batch_run_side_by_side(tmp_path: Path) -> None:
    world = World(tmp_path)
    met: dict[str, asyncio.Event] = {"a": asyncio.Event(), "b": asyncio.Event()}

    @tool
    async def meet(ctx: ToolContext, me: str) -> str:
        """Wait for the other sub-agent.

        Args:
            me: a or b.
        """
        met[me].set()
        other = met["b" if me == "a" else "a"]
        return "together" if await sleep_until_set(world.clock, 30.0, other) else "alone"

    world.tools.append(meet)
    world.core = world._core()
    await world.core.start()

    def respond(request: ModelRequest) -> Step:
        last = request.messages[-1]
        if not is_sub(request):
            if isinstance(last, ToolResult):
                return text("Both met.")
            return step(delegate("Meet as a.", ["meet"]), delegate("Meet as b.", ["meet"], index=1))
        me = "a" if "as a" in str(request.messages[0]) else "b"
        if isinstance(last, ToolResult):
            return text(f"{me} was {last.content}.")
        return step(call("meet", {"me": me}, provider_id=f"m{me}"))

    world.model.respond = respond
    try:
        await world.say("Get a and b to meet")
        results = [r.content for r in await world.results()]
        assert results == ["a was together.", "b was together."]  # in call order
        assert world.surface.texts()[-1].endswith("Both met.")
    finally:
        await world.core.aclose()


async def test_more_delegations_than_places_wait_for_one(tmp_path: Path) -> None:
    world = World(tmp_path, delegate_max_concurrent=2)
    running: list[int] = []
    most = 0
    two_at_once = asyncio.Event()

    @tool
    async def work(ctx: ToolContext, n: int) -> str:
        """Work a while.

        Args:
            n: Which.
        """
        nonlocal most
        running.append(n)
        most = max(most, len(running))
        if len(running) >= 2:
            two_at_once.set()
        async with asyncio.timeout(10):  # each works until two have run at once (the third after)
            await two_at_once.wait()
        running.remove(n)
        return f"done {n}"

    world.tools.append(work)
    world.core = world._core()
    await world.core.start()

    def respond(request: ModelRequest) -> Step:
        last, task = request.messages[-1], request.messages[0]
        if not is_sub(request):
            if isinstance(last, ToolResult):
                return text("All done.")
            return step(*(delegate(f"Do {n}.", ["work"], index=n) for n in range(3)))
        if isinstance(last, ToolResult):
            return text(last.content)
        assert isinstance(task, UserMessage)
        n = int(task.text.removeprefix("Do ").rstrip("."))
        return step(call("work", {"n": n}, provider_id=f"w{n}"))

    world.model.respond = respond
    try:
        await world.say("Do three things")
        assert [r.content for r in await world.results()] == ["done 0", "done 1", "done 2"]
        assert most == 2
    finally:
        await world.core.aclose()


async def test_a_sub_agent_that_loops_is_ended_by_its_step_limit_with_words(tmp_path: Path) -> None:
    world = World(tmp_path, delegate_max_turns=3)
    await world.core.start()

    def respond(request: ModelRequest) -> Step:
        if not is_sub(request):
            if isinstance(request.messages[-1], ToolResult):
                return text("The sub-agent could not finish.")
            return step(delegate("Look forever.", ["lookup"]))
        if not request.tools:  # its wrap-up call: tools are no longer offered
            return text("I looked three times and found 42 each time.")
        return step(call("lookup", {"what": "it"}))

    world.model.respond = respond
    try:
        await world.say("Look it up")
        subs = [r for r in world.model.requests if is_sub(r)]
        assert len(subs) == 4 and not subs[-1].tools  # three steps, then one answer without tools
        [result] = await world.results()
        assert result.content.startswith(
            "(The sub-agent used all 3 of its steps and had to stop there.)"
        )
        assert result.content.endswith("I looked three times and found 42 each time.")
        assert world.surface.texts()[-1].endswith("The sub-agent could not finish.")
    finally:
        await world.core.aclose()


async def test_a_sub_agent_over_its_token_limit_is_stopped_with_words(tmp_path: Path) -> None:
    world = World(tmp_path, delegate_max_tokens=50_000)
    await world.core.start()
    big = Usage(prompt_tokens=30_000, completion_tokens=10)

    def respond(request: ModelRequest) -> Step:
        if not is_sub(request):
            if isinstance(request.messages[-1], ToolResult):
                return text("It ran out of tokens.")
            return step(delegate("Read everything.", ["lookup"]))
        return [*call("lookup", {"what": "more"}), *text(usage=big)[-2:]]

    world.model.respond = respond
    try:
        await world.say("Read it all")
        assert len([r for r in world.model.requests if is_sub(r)]) == 2
        [result] = await world.results()
        assert (
            result.is_error
            and "stopped before finishing: it reached its limit of 50,000 tokens" in result.content
        )
        assert world.surface.texts()[-1].endswith("It ran out of tokens.")
        assert (await world.session()).usage.prompt_tokens >= 60_000  # its usage counts
    finally:
        await world.core.aclose()


async def test_a_sub_agents_tokens_count_toward_the_runs_limit(tmp_path: Path) -> None:
    world = World(tmp_path, run_max_tokens=50_000)
    await world.core.start()
    big = Usage(prompt_tokens=30_000, completion_tokens=10)

    def respond(request: ModelRequest) -> Step:
        if is_sub(request):
            return [*call("lookup", {"what": "more"}), *text(usage=big)[-2:]]
        return step(delegate("Read everything.", ["lookup"]))

    world.model.respond = respond
    try:
        await world.say("Read it all")
        assert (
            len(world.model.requests) == 3
        )  # the parent is not called again: its run is over its limit
        [result] = await world.results()
        assert "it reached its limit of 50,000 tokens" in result.content  # the run's limit is lower
        assert "This request reached its token limit (50,000 tokens)" in world.surface.texts()[-1]
    finally:
        await world.core.aclose()


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (
            {"task": "Look.", "tools": ["lookup", "nope"]},
            "there is no tool named 'nope' here. The tools that exist: ",
        ),
        (
            {"task": "Look.", "tools": ["delegate_task"]},
            "cannot be given delegate_task: sub-agents do not delegate further",
        ),
        ({"task": "   ", "tools": ["lookup"]}, "the task is empty"),
        ({"task": "Look."}, "invalid arguments for delegate_task: tools: Field required"),
        ('{"task": "Look.", "tools": "lookup"}', "invalid arguments for delegate_task: tools"),
    ],
)
async def test_bad_arguments_are_an_error_the_model_reads(
    world: World, arguments: dict[str, Any] | str, expected: str
) -> None:
    world.model.steps = [step(call("delegate_task", arguments)), text("Let me fix that.")]
    await world.say("Look it up")
    [result] = await world.results()
    assert result.is_error and expected in result.content, result.content
    assert len(world.model.requests) == 2 and not any(is_sub(r) for r in world.model.requests)
    if "nope" in json.dumps(arguments):
        named = result.content.split("The tools that exist: ")[1]
        assert "lookup" in named and "deploy" in named and "delegate_task" not in named
    assert world.surface.texts()[-1].endswith("Let me fix that.")


async def test_a_restart_mid_delegation_closes_its_card_and_runs_nothing(world: World) -> None:
    world.model.steps = [
        step(delegate("Ship the service.", ["deploy"])),
        step(call("deploy", {"target": "prod"})),
        text("I was restarted: the delegation was cut off and nothing was deployed."),
    ]
    old = world.core
    work = asyncio.ensure_future(old.handle(world.inbound("ship it"), world.surface))
    await run_until(world.clock, lambda: bool(world.cards()) and world.cards()[0].buttons != ())
    [card] = world.cards()
    posted = card.first_buttons
    # killed: the old process never runs again (its clock stands still); a new one starts
    later = ManualClock(start=world.clock.now() + 5.0)
    world.core = world._core(later)
    try:
        await world.core.start()
        await drive(later, world.core.recover())
        await drive(later, world.core.wait_idle())
        [card] = world.cards()  # no second card
        assert "Expired" in card.text and "cut off by a restart" in card.text and card.buttons == ()
        delegated = next(r for r in await world.results() if r.name == "delegate_task")
        assert delegated.content == INTERRUPTED and delegated.is_error
        session = await world.session()
        assert session.state is RunState.IDLE and asking.RECORD not in session.toolkits
        assert world.surface.texts()[-1].endswith("nothing was deployed.")
        approve = next(b for b in posted if b.label == "Approve")
        note = await drive(later, world.core.on_action(approve.action_id, ALICE, world.surface))
        assert note == "This request has already expired; nothing was run."
        [request] = await _all_requests(world)
        assert request.status is ApprovalStatus.EXPIRED
        assert world.ran == []  # never run, before or after the restart
    finally:
        work.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await drive(world.clock, work)
        await drive(world.clock, old.aclose())


async def _all_requests(world: World) -> list[Any]:
    async with world.core.store.transaction() as db:
        rows = await (await db.execute("SELECT id FROM approvals")).fetchall()
    found = [await world.core.store.get_approval(str(row[0])) for row in rows]
    return [r for r in found if r is not None]
