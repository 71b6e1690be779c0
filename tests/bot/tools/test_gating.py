"""Declared gating: a toolkit's tools offered as the thread's toolkit state says (states
required, forbidden, enabled, disabled; context keys needed; parameter values from the
context), persisted with the session; and the calls of one batch running side by side only
across toolkits."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from bot.sessions.model import Session
from bot.tools import Tool, ToolContext, ToolRegistry
from bot.tools.base import AnyArguments, tool
from bot.tools.gating import GatedToolkit, states, values
from bot.tools.settings import Gating
from bot.tools.state import state
from tests.bot.tools.world import KEY, World
from tests.fakes.scripted_model import call, step, text

WAIT_S = 30.0


@tool
async def open_(ctx: ToolContext) -> str:
    """Open the ledger."""
    return "opened"


@tool
async def close(ctx: ToolContext) -> str:
    """Close the ledger."""
    return "closed"


@tool
async def add(ctx: ToolContext, account: str) -> str:
    """Add an account.

    Args:
        account: Its name.
    """
    return f"added {account}"


@tool
async def pay(ctx: ToolContext, account: str, amount: int) -> str:
    """Pay into an account.

    Args:
        account: One of the accounts added.
        amount: How much.
    """
    return f"paid {amount} into {account}"


def ledger() -> GatedToolkit:
    """``ledger__open`` enables ``ledger__add``/``ledger__pay``/``ledger__close``; ``close``
    disables them; ``pay``'s account is one of the accounts ``add`` remembered."""
    return GatedToolkit(
        "ledger",
        [
            (open_.renamed("open"), Gating(forbids={"open"}, enables={"open"})),
            (close, Gating(requires={"open"}, disables={"open"})),
            (add, Gating(requires={"open"}, remembers={"accounts": "account"})),
            (pay, Gating(requires={"open"}, choices={"account": "accounts"})),
        ],
    )


def offered(request: Any, prefix: str = "ledger__") -> dict[str, Any]:
    return {t.name: t.parameters for t in request.tools if t.name.startswith(prefix)}


@pytest.fixture
async def world(tmp_path: Path) -> Any:
    w = await World(tmp_path, toolkits=[(ledger(), ())]).start()
    yield w
    await w.core.aclose()


async def test_the_tools_offered_follow_the_declared_states_and_survive_a_restart(
    world: World,
) -> None:
    world.model.steps = [
        step(call("ledger__add", {"account": "rent"})),  # not offered: the ledger is closed
        step(
            call("ledger__open", {}, index=0, provider_id="a"),
            call("ledger__add", {"account": "rent"}, index=1, provider_id="b"),
        ),  # sees the change
        text("Opened, rent added."),
    ]
    await world.say("open the ledger and add rent")
    first, second, third = world.model.requests
    assert set(offered(first)) == {"ledger__open"}
    refused = second.messages[-1].content
    assert "ledger__add is not available now: it needs the state open (off now)" in refused
    assert "ledger__open would change that" in refused
    assert set(offered(third)) == {"ledger__close", "ledger__add", "ledger__pay"}
    assert offered(third)["ledger__pay"]["properties"]["account"]["enum"] == ["rent"]
    assert [m.content for m in third.messages[-2:]] == ["opened", "added rent"]

    await world.restart()  # the state was saved with the session
    assert (await world.session()).toolkits == {
        "ledger": {"states": ["open"], "context": {"accounts": ["rent"]}}
    }
    assert "ledger: open" in await world.core.describe(KEY)
    world.model.steps = [
        step(call("ledger__pay", {"account": "food", "amount": 3})),  # not one of the accounts
        step(call("ledger__pay", {"account": "rent", "amount": 3})),
        step(call("ledger__close", {})),
        text("Closed."),
    ]
    await world.say("pay 3 into rent, then close")
    paid_wrong, paid, closed, after = world.model.requests[3:]
    assert (
        "account must be one of rent (what accounts holds now), not 'food'"
        in paid.messages[-1].content
    )
    assert closed.messages[-1].content == "paid 3 into rent"
    assert set(offered(after)) == {"ledger__open"}
    assert (await world.session()).toolkits == {"ledger": {"context": {"accounts": ["rent"]}}}


async def test_a_failed_call_changes_no_state(tmp_path: Path) -> None:
    @tool
    async def start(ctx: ToolContext, ok: bool) -> str:
        """Start, or fail to.

        Args:
            ok: Whether it works.
        """
        if not ok:
            raise ValueError("the engine will not turn over")
        return "started"

    kit = GatedToolkit("car", [(start, Gating(enables={"running"}))])
    w = await World(tmp_path, toolkits=[(kit, ())]).start()
    try:
        w.model.steps = [step(call("car__start", {"ok": False})), text("It failed.")]
        await w.say("start the car")
        assert "the engine will not turn over" in w.model.requests[-1].messages[-1].content
        assert (await w.session()).toolkits == {}
    finally:
        await w.core.aclose()


def test_undeclared_tools_are_always_offered_and_declarations_are_checked() -> None:
    plain = Tool("ping", "Ping.", AnyArguments, _ok)
    kit = GatedToolkit("net", [(plain, Gating()), (plain.renamed("send"), Gating(needs={"peer"}))])
    registry = ToolRegistry()
    registry.attach(kit)
    session = Session(key=KEY)
    assert [s.name for s in registry.specs(KEY, session)] == ["net__ping"]
    assert registry.specs(KEY, session) is registry.specs(KEY, Session(key=KEY))  # computed once
    assert registry.names == ["net__ping", "net__send"]
    assert "needs peer in the thread's context (empty now)" in kit.missing(
        KEY, "net__send", state(session, "net")
    )
    with pytest.raises(ValidationError, match="both required and forbidden"):
        Gating(requires={"a"}, forbids={"a"})
    with pytest.raises(ValidationError, match="not a state or context name"):
        Gating(enables={"has space"})
    assert states({"states": "not a list"}) == frozenset()
    assert values({"context": {"k": {"a": 1, "b": 2}}}, "k") == ("a", "b")
    assert values({"context": {"k": "one"}}, "k") == ("one",)


async def _ok(ctx: ToolContext, **arguments: Any) -> str:
    return "ok"


class Meeting:
    """Read-only tools that meet each other through events: each records who was running when
    it started, and may wait for another to start or finish (bounded: never hangs)."""

    def __init__(self) -> None:
        self.started: dict[str, asyncio.Event] = {}
        self.finished: dict[str, asyncio.Event] = {}
        self.running: set[str] = set()
        self.overlaps: list[tuple[str, frozenset[str]]] = []

    def event(self, kind: dict[str, asyncio.Event], name: str) -> asyncio.Event:
        return kind.setdefault(name, asyncio.Event())

    def tool(
        self, kit: str, name: str, *, waits_started: str = "", waits_finished: str = ""
    ) -> Tool:
        """``name`` of the toolkit ``kit`` (known to the others as ``kit__name``)."""
        label = f"{kit}__{name}"

        async def run(ctx: ToolContext, **arguments: Any) -> str:
            self.overlaps.append((label, frozenset(self.running)))
            self.running.add(label)
            self.event(self.started, label).set()
            try:
                for _ in range(5):  # give any call started beside this one its turn
                    await asyncio.sleep(0)
                if waits_started:
                    await asyncio.wait_for(self.event(self.started, waits_started).wait(), WAIT_S)
                if waits_finished:
                    await asyncio.wait_for(self.event(self.finished, waits_finished).wait(), WAIT_S)
            finally:
                self.running.discard(label)
            self.event(self.finished, label).set()
            return f"{label} done"

        return Tool(name, f"{name}.", AnyArguments, run)


async def test_read_only_calls_to_different_toolkits_overlap_and_keep_their_order(
    tmp_path: Path,
) -> None:
    meeting = Meeting()
    alpha = GatedToolkit(
        "alpha",
        [
            (
                meeting.tool(
                    "alpha", "slow", waits_started="beta__slow", waits_finished="beta__slow"
                ),
                Gating(),
            )
        ],
    )
    beta = GatedToolkit(
        "beta", [(meeting.tool("beta", "slow", waits_started="alpha__slow"), Gating())]
    )
    w = await World(tmp_path, toolkits=[(alpha, ()), (beta, ())]).start()
    try:
        w.model.steps = [
            step(
                call("alpha__slow", {}, index=0, provider_id="a"),
                call("beta__slow", {}, index=1, provider_id="b"),
            ),
            text("Both done."),
        ]
        await w.say("ask both")
        last = w.model.requests[-1].messages
        assert [(m.name, m.content) for m in last[-2:]] == [
            ("alpha__slow", "alpha__slow done"),
            ("beta__slow", "beta__slow done"),
        ]
        assert (
            "beta__slow",
            frozenset({"alpha__slow"}),
        ) in meeting.overlaps  # it ran beside alpha's
    finally:
        await w.core.aclose()


async def test_calls_of_one_toolkit_run_one_after_another(tmp_path: Path) -> None:
    meeting = Meeting()
    kit = GatedToolkit(
        "solo",
        [(meeting.tool("solo", "first"), Gating()), (meeting.tool("solo", "second"), Gating())],
    )
    other = GatedToolkit("other", [(meeting.tool("other", "third"), Gating())])
    w = await World(tmp_path, toolkits=[(kit, ()), (other, ())]).start()
    try:
        w.model.steps = [
            step(
                call("solo__first", {}, index=0, provider_id="a"),
                call("solo__second", {}, index=1, provider_id="b"),
                call("other__third", {}, index=2, provider_id="c"),
            ),
            text("Done."),
        ]
        await w.say("all three")
        assert ("solo__second", frozenset()) in meeting.overlaps  # first had finished
        assert ("other__third", frozenset({"solo__second"})) in meeting.overlaps
        names = [m.name for m in w.model.requests[-1].messages if m.role == "tool"]
        assert names == ["solo__first", "solo__second", "other__third"]
    finally:
        await w.core.aclose()
