"""Scheduled prompts through the real core on a fake clock: a scheduled run is a new turn of its
thread attributed to the person who scheduled it, whose approvals are theirs; runs survive a
restart, come late once, and a one-off runs exactly once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.api.inbound import Inbound, ThreadKey
from bot.config import AccessSettings
from bot.core import Core
from bot.llm.messages import UserMessage
from bot.llm.model import ModelPiece, ModelRequest
from bot.llm.wire import user_content
from bot.scheduler.prompts import UNREACHABLE_RETRY_S, left_over_notice
from bot.storage.sqlite.store import SqliteStore
from bot.tools import ToolRegistry
from tests.bot.world import ALICE, BOB, KEY, NOW, World
from tests.fakes.scripted_model import ScriptedModel, call, step, text
from tests.fakes.surface import drive, settle


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    w = World(tmp_path)
    await w.core.start()
    yield w
    await w.core.aclose()


def scheduling(prompt: str, when: str) -> list[object]:
    return [step(call("schedule_prompt", {"prompt": prompt, "when": when})), text("Scheduled.")]


async def test_a_scheduled_prompt_is_a_new_turn_attributed_to_the_person(world: World) -> None:
    world.model.steps = scheduling("Check the build", "in 5 minutes")  # type: ignore[assignment]
    await world.say("check the build in 5 minutes, please")
    [result] = await world.results()
    assert (
        result.content == "Scheduled s1: next run Sat 2026-03-28 12:05 CET (Europe/Paris) (once)."
    )

    world.model.steps = [text("The build is green.")]
    [schedule] = await world.schedules()
    assert await world.until(schedule.next_at - 0.5) == 0 and len(world.model.requests) == 2
    assert await world.until(schedule.next_at) == 1
    shown = world.thread().texts()[-1]
    assert (
        shown.startswith("_⏰ Scheduled by Alice: Check the build_")
        and "The build is green." in shown
    )
    assert "late" not in shown
    asked = (await world.asked())[-1]
    assert asked == UserMessage(
        text="Check the build",
        author_id=ALICE.id,
        author_name="scheduled by Alice",
        event_id=f"schedule:s1:{schedule.next_at:.3f}",
    )
    assert user_content(asked) == "[scheduled by Alice]: Check the build"
    assert (
        await world.schedules() == [] and await world.core.store.next_due() is not None
    )  # only housekeeping
    assert await world.later(3600) == 1 and len(world.model.requests) == 3  # it ran once


async def test_the_approvals_of_a_scheduled_run_go_to_the_person_who_scheduled_it(
    world: World,
) -> None:
    world.model.steps = scheduling("Deploy to staging", "in 1 hour")  # type: ignore[assignment]
    await world.say("deploy to staging in an hour", ALICE)
    world.model.steps = [step(call("deploy", {"target": "staging"})), text("Deployed to staging.")]
    await world.later(3600)
    assert world.cards() and world.ran == []
    assert "Asked by Alice (scheduled)." in world.cards()[-1].text
    assert "scheduled by" not in world.cards()[-1].text
    assert "isn't yours to decide" in (await world.click("Approve", BOB) or "")
    assert world.ran == []
    assert await world.click("Approve", ALICE) == "Approved."
    assert world.ran == ["staging"]
    assert "Deployed to staging." in world.thread().visible_text()


async def test_a_run_claimed_by_a_process_that_stopped_before_its_turn_is_answered_after_the_restart(
    world: World,
) -> None:
    world.model.steps = scheduling("Check the build", "in 5 minutes")  # type: ignore[assignment]
    await world.say("check the build in 5 minutes, please")
    [schedule] = await world.schedules()
    reached: list[str] = []

    async def stopped(key: ThreadKey, message: UserMessage, *_: object) -> None:
        reached.append(message.text)  # the process ends here: the turn never begins

    world.core.schedules._answer = stopped  # type: ignore[assignment]
    assert await world.until(schedule.next_at) == 1
    assert reached == ["Check the build"] and await world.schedules() == []  # the run was claimed
    world.model.steps = [text("The build is green.")]
    await world.restart(down_for=60)
    assert await world.core.recover() == 1  # as `threadline run` does once its adapters are up
    await drive(world.clock, world.core.wait_idle())
    asked = [m for m in await world.asked() if m.event_id == f"schedule:s1:{schedule.next_at:.3f}"]
    assert [(m.text, m.author_name) for m in asked] == [("Check the build", "scheduled by Alice")]
    assert (
        world.thread().texts()[-1]
        == "_⏰ Scheduled by Alice: Check the build_\n\nThe build is green."
    )
    assert await world.later(3600) == 1 and len(world.model.requests) == 3  # once, not again


def test_a_left_over_scheduled_message_says_who_scheduled_it_and_whether_it_ran_late() -> None:
    def message(text: str, event_id: str | None) -> UserMessage:
        return UserMessage(text=text, author_name="scheduled by Alice", event_id=event_id)

    assert (
        left_over_notice(message("Check the build", "schedule:s1:60.000"))
        == "⏰ Scheduled by Alice: Check the build"
    )
    late = message(
        "Check the build\n\n(This scheduled prompt was due 09:00; it runs late because...)",
        "schedule:s1:6",
    )
    assert left_over_notice(late) == (
        "⏰ Scheduled by Alice: Check the build — running late: I was not running when it was due."
    )
    assert left_over_notice(message("Check the build", "Ev123")) is None  # a person wrote it


async def test_a_one_off_due_while_the_bot_was_down_runs_once_when_it_is_back_and_says_so(
    world: World,
) -> None:
    world.model.steps = scheduling("Send the weekly report", "in 10 minutes")  # type: ignore[assignment]
    await world.say("send the weekly report in 10 minutes")
    world.model.steps = [text("Here is the report.")]
    await world.restart(down_for=3 * 3600)
    assert await world.later(0) >= 1
    shown = world.thread().texts()[-1]
    assert "due Sat 2026-03-28 12:10 CET, running late: I was not running then." in shown
    assert "Here is the report." in shown
    assert "runs late" in (await world.asked())[-1].text  # the model knows too
    await world.restart(down_for=60)
    await world.later(3600)
    assert len(world.model.requests) == 3  # once, not again after another restart


async def test_a_recurring_prompt_runs_once_for_the_runs_it_missed_then_keeps_its_rhythm(
    world: World,
) -> None:
    world.model.steps = scheduling("Post the queue length", "0 * * * *")  # type: ignore[assignment]
    await world.say("every hour, post the queue length")
    [result] = await world.results()
    assert (
        result.content.startswith("Scheduled s1: next run Sat 2026-03-28 13:00 CET")
        and "0 * * * *" in result.content
    )

    world.model.default = text("Queue: 3.")
    await world.restart(down_for=5 * 3600 + 1800)  # 13:00 to 17:00 missed; now 17:30
    await world.later(0)
    assert len(world.model.requests) == 3
    assert "(missed runs are not repeated)" in world.thread().texts()[-1]
    [schedule] = await world.schedules()
    assert schedule.next_at == NOW + 6 * 3600  # 18:00
    await world.later(1800)
    assert len(world.model.requests) == 4
    assert "late" not in world.thread().texts()[-1]


async def test_two_processes_woken_together_run_a_one_off_once(
    world: World, tmp_path: Path
) -> None:
    world.model.steps = scheduling("Tag the release", "in 1 minute")  # type: ignore[assignment]
    await world.say("tag the release in a minute")
    world.model.default = text("Tagged.")
    other = Core(
        world.settings,
        SqliteStore(world.settings.database_path),
        world.model,
        ToolRegistry(world.tools),
        world.clock,
    )
    other.register_surfaces("slack:", world.thread, lambda key: key.rsplit(":", 1)[0])
    await other.start()
    try:
        await world.clock.advance(60)
        await asyncio.gather(world.core.scheduler.run_due(), other.scheduler.run_due())
        await drive(world.clock, asyncio.gather(world.core.wait_idle(), other.wait_idle()))
    finally:
        await other.aclose()
    scheduled = [m for m in await world.asked() if m.author_name == "scheduled by Alice"]
    assert len(scheduled) == 1 and len(world.model.requests) == 3


async def test_a_person_denied_since_gets_no_scheduled_run(world: World) -> None:
    world.model.steps = scheduling("Rotate the keys", "in 1 hour")  # type: ignore[assignment]
    await world.say("rotate the keys in an hour")
    await world.restart(access=AccessSettings(deny_users=[ALICE.id]))
    await world.later(3600)
    assert len(world.model.requests) == 2 and await world.schedules() == []


async def test_a_thread_nothing_reaches_yet_is_tried_again_and_runs_late(world: World) -> None:
    elsewhere = ThreadKey("chat:W1:C7:1.1")
    world.model.steps = scheduling("Water the plants", "in 1 minute")  # type: ignore[assignment]
    inbound = Inbound(elsewhere, ALICE, "water the plants in a minute", "ev-elsewhere")
    await drive(world.clock, world.core.handle(inbound, world.thread(elsewhere)))
    world.model.default = text("Watered.")
    await world.later(60)
    assert len(world.model.requests) == 2 and len(await world.schedules(elsewhere)) == 1
    world.core.register_surfaces("chat:", world.thread)
    await world.later(UNREACHABLE_RETRY_S)
    assert len(world.model.requests) == 3 and await world.schedules(elsewhere) == []
    assert "Watered." in world.thread(elsewhere).visible_text()


class Gated:
    """The scripted model, held before answering Bob until the gate opens."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.gate = asyncio.Event()
        self.label = self.name = "gated"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        asked = [m for m in request.messages if isinstance(m, UserMessage)][-1]
        if asked.author_name == "Bob":
            await self.gate.wait()
        async for piece in self.inner.stream(request):
            yield piece

    async def aclose(self) -> None:
        return None


async def test_a_scheduled_run_waits_for_the_run_going_on_in_its_thread(tmp_path: Path) -> None:
    inner = ScriptedModel([])
    gated = Gated(inner)
    world = World(tmp_path, model=gated)
    world.model = inner
    await world.core.start()
    try:
        inner.steps = scheduling("Summarise the thread", "in 1 minute")  # type: ignore[assignment]
        await world.say("summarise this in a minute")
        inner.respond = lambda request: text(
            f"re: {user_content([m for m in request.messages if isinstance(m, UserMessage)][-1])}"
        )
        busy = asyncio.ensure_future(
            world.core.handle(Inbound(KEY, BOB, "a long question", "ev-bob"), world.thread())
        )
        await settle()
        await world.clock.advance(60)
        assert await world.core.scheduler.run_due() == 1
        gated.gate.set()
        await drive(world.clock, asyncio.gather(busy, world.core.wait_idle()))
    finally:
        await world.core.aclose()
    shown = world.thread().texts()
    assert shown[-2] == "re: [Bob]: a long question"
    assert shown[-1].startswith("_⏰ Scheduled by Alice: Summarise the thread_")  # its own turn
    assert shown[-1].endswith("re: [scheduled by Alice]: Summarise the thread")
