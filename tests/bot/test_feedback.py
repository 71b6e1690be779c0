"""👍 / 👎 under final answers, through the core: offered, kept once per person, noted, counted."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.api import actions
from bot.errors import ModelUnavailable
from bot.feedback.service import GONE, THANKS
from bot.infra import metrics
from tests.bot.test_core import ALICE, BOB, World
from tests.fakes.scripted_model import text


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    w = World(tmp_path, [], feedback=True)
    await w.core.start()
    yield w
    await w.core.aclose()


def counted(value: str) -> float:
    return metrics.REGISTRY.get_sample_value("threadline_feedback_total", {"value": value}) or 0.0


def thumbs(world: World) -> list[str]:
    """The action ids of the feedback buttons the thread shows, last answer last."""
    return [
        b.action_id
        for m in world.surface.live()
        for b in m.buttons
        if actions.is_feedback(b.action_id)
    ]


async def test_a_final_answer_gets_thumbs_and_a_second_click_counts_once(world: World) -> None:
    world.model.steps = [text("the answer")]
    await world.say("question")
    up, down = thumbs(world)
    assert [b.label for m in world.surface.live() for b in m.buttons] == ["👍", "👎"]
    before_up, before_down = counted("up"), counted("down")

    assert await world.core.on_action(up, ALICE, world.surface) is None
    await world.core.on_action(up, ALICE, world.surface)
    await world.core.on_action(down, ALICE, world.surface)  # the last one wins
    await world.core.on_action(up, BOB, world.surface)

    given = await world.core.store.feedback_since(0.0, 10)
    assert [(f.user_name, f.value) for f in given] == [("Alice", "down"), ("Bob", "up")]
    assert given[0].key == world.surface.thread_key
    assert counted("up") - before_up == 2 and counted("down") - before_down == 1


async def test_a_thumbs_down_takes_a_one_line_note_until_the_thread_is_reset(
    world: World,
) -> None:
    world.model.steps = [text("one"), text("two")]
    await world.say("first")
    await world.say("second")
    first_down, second_down = thumbs(world)[1], thumbs(world)[3]
    await world.core.on_action(first_down, ALICE, world.surface)
    await world.core.on_action(second_down, ALICE, world.surface)

    form = actions.explain_after(first_down)
    assert form is not None
    assert await world.core.explain(form, ALICE, "  made up\n a flag ") == THANKS
    given = await world.core.store.feedback_since(0.0, 10)  # both clicked at the same moment
    assert sorted(f.note for f in given) == ["", "made up a flag"]
    assert await world.core.explain(form, BOB, "never clicked") == GONE

    await world.core.reset(world.surface.thread_key, world.surface)
    later = actions.explain_after(second_down)
    assert later is not None
    assert await world.core.explain(later, ALICE, "too late") == GONE
    assert await world.core.explain("nonsense", ALICE, "x") == "That form is no longer active."


async def test_an_answer_that_failed_gets_no_thumbs(world: World) -> None:
    world.model.steps = [ModelUnavailable("connection refused")]
    await world.say("question")
    assert thumbs(world) == []


async def test_without_the_setting_no_thumbs_show(tmp_path: Path) -> None:
    w = World(tmp_path, [text("plain")])
    await w.core.start()
    try:
        await w.say("question")
        assert thumbs(w) == [] and w.surface.texts() == ["plain"]
    finally:
        await w.core.aclose()
