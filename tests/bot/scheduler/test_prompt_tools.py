"""The schedule tools as the model uses them: what each thread is offered, bad ``when`` values,
and a flood of requests against the limits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.errors import Refused
from bot.llm.model import ModelRequest
from bot.scheduler.schedules import Schedule
from tests.bot.world import ALICE, KEY, World
from tests.fakes.scripted_model import call, step, text


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    w = World(tmp_path, schedules_per_thread=10, schedules_per_channel=50)
    await w.core.start()
    yield w
    await w.core.aclose()


def offered(request: ModelRequest) -> dict[str, dict[str, object]]:
    return {t.name: dict(t.parameters) for t in request.tools}


async def test_cancel_is_offered_only_with_the_threads_own_schedule_ids(world: World) -> None:
    other = "slack:T1:C1:200.2"
    world.model.steps = [
        step(call("schedule_prompt", {"prompt": "ping", "when": "in 1 hour"})),
        text("ok"),
    ]
    await world.say("ping me in an hour", key=other)
    world.model.steps = [
        step(call("schedule_prompt", {"prompt": "Check the build", "when": "0 9 * * 1-5"})),
        step(call("list_schedules", {})),
        step(call("cancel_schedule", {"schedule_id": "s1"})),  # the other thread's
        step(call("cancel_schedule", {"schedule_id": "s2"})),
        text("Done."),
    ]
    await world.say("check the build every weekday at nine, then cancel it")
    first, second, *_, last = world.model.requests[2:]
    assert {"schedule_prompt", "list_schedules"} <= offered(first).keys()
    assert "cancel_schedule" not in offered(first)  # nothing to cancel yet
    ids = offered(second)["cancel_schedule"]["properties"]["schedule_id"]  # type: ignore[index]
    assert ids["enum"] == ["s2"]  # type: ignore[index]
    assert "cancel_schedule" not in offered(last)
    listing, refused, cancelled = [r.content for r in await world.results()][1:]
    assert "s2: next Mon 2026-03-30 09:00 CEST, repeats: cron `0 9 * * 1-5`" in listing
    assert "by Alice: Check the build" in listing and "Now: Sat 2026-03-28 12:00 CET" in listing
    assert refused.startswith("error: this thread has no schedule 's1'")
    assert cancelled == "Cancelled s2 (0 9 * * 1-5): it will not run."
    assert await world.schedules() == [] and len(await world.schedules(other)) == 1
    assert [
        j.id for j in await world.core.store.due_jobs(1e12) if j.kind == "scheduled_prompt"
    ] == ["prompt:s1"]


async def test_a_call_to_cancel_where_there_is_nothing_to_cancel_is_told_so(world: World) -> None:
    world.model.steps = [
        step(call("cancel_schedule", {"schedule_id": "s1"})),
        text("Nothing there."),
    ]
    await world.say("cancel my schedule")
    [result] = await world.results()
    assert (
        result.is_error
        and result.content == "error: there is no schedule in this thread to cancel."
    )


@pytest.mark.parametrize(
    ("when", "words"),
    [
        ("whenever you like", "cannot read when='whenever you like'. Accepted forms:"),
        ("2020-01-01T09:00", "is in the past"),
        ("0 0 30 2 *", "never fires"),
        ("*/30 * * * * *", "Accepted forms:"),
    ],
)
async def test_a_bad_when_is_an_error_the_model_sees_and_nothing_is_stored(
    world: World, when: str, words: str
) -> None:
    world.model.steps = [
        step(call("schedule_prompt", {"prompt": "x", "when": when})),
        text("Sorry."),
    ]
    await world.say("do it")
    [result] = await world.results()
    assert result.is_error and words in result.content, result.content
    assert await world.schedules() == [] and world.thread().texts()[-1] == "Sorry."


async def test_an_empty_or_huge_prompt_is_refused_by_the_arguments(world: World) -> None:
    world.model.steps = [
        step(call("schedule_prompt", {"prompt": "", "when": "in 1 hour"})),
        step(call("schedule_prompt", {"prompt": "x" * 5000, "when": "in 1 hour"})),
        step(call("schedule_prompt", {"prompt": "   ", "when": "in 1 hour"})),
        text("Sorry."),
    ]
    await world.say("do it")
    empty, huge, blank = await world.results()
    assert (
        "invalid arguments for schedule_prompt: prompt: String should have at least 1 character"
        in empty.content
    )
    assert "at most 4000 characters" in huge.content
    assert blank.content == "error: the prompt is empty: say what should be done when it runs."
    assert await world.schedules() == []


async def test_a_flood_of_a_thousand_requests_in_one_answer_stops_at_the_limit(
    world: World,
) -> None:
    calls = [
        call(
            "schedule_prompt",
            {"prompt": f"task {i}", "when": f"in {i + 1} minutes"},
            index=i,
            provider_id=f"c{i}",
        )
        for i in range(1000)
    ]
    world.model.steps = [step(*calls), text("I tried.")]
    await world.say("schedule a thousand things")
    results = await world.results()
    assert len(results) == 1000
    assert sum(r.content.startswith("Scheduled s") for r in results) == 10
    refused = [r for r in results if r.is_error]
    assert len(refused) == 990
    assert all("this thread already has 10 schedules" in r.content for r in refused)
    assert len(await world.schedules()) == 10
    assert (
        sum(j.kind == "scheduled_prompt" for j in await world.core.store.due_jobs(1e12, 5000)) == 10
    )


async def test_concurrent_requests_from_many_threads_stop_at_the_channel_limit(
    world: World,
) -> None:
    keys = [f"slack:T1:C1:{i}.0" for i in range(100)]

    async def ask(i: int) -> Schedule | str:
        try:
            return await world.core.schedules.create(keys[i % 100], ALICE, f"task {i}", "in 1 hour")
        except Refused as exc:
            return str(exc)

    outcomes = await asyncio.gather(*(ask(i) for i in range(1000)))
    assert sum(isinstance(o, Schedule) for o in outcomes) == 50
    assert {o for o in outcomes if isinstance(o, str)} == {
        "this channel already has 50 schedules, the most allowed (THREADLINE_SCHEDULES_PER_CHANNEL); cancel one first."
    }
    other = await world.core.schedules.create("slack:T1:C2:1.0", ALICE, "elsewhere", "in 1 hour")
    assert other.channel == "slack:T1:C2"
    assert KEY.startswith("slack:T1:C1")


async def test_a_schedule_another_worker_adds_is_offered_at_the_threads_next_run(
    world: World,
) -> None:
    world.model.steps = [text("hi")]
    await world.say("hello")
    assert "cancel_schedule" not in offered(world.model.requests[-1])
    now = world.core.clock.now()
    draft = Schedule(
        "", KEY, world.core.surfaces.channel_of(KEY), "ping", "in 1 hour", None,
        "Europe/Paris", now + 3600, ALICE.id, "Alice", now,
    )  # fmt: skip
    await world.core.store.add_schedule(draft, per_thread=10, per_channel=50)
    world.model.steps = [text("hi again")]
    await world.say("hello again")
    ids = offered(world.model.requests[-1])["cancel_schedule"]["properties"]["schedule_id"]  # type: ignore[index]
    assert ids["enum"] == ["s1"]  # type: ignore[index]
