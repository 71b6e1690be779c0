"""👍 / 👎 under an answer, as Slack's AI apps show them (``context_actions`` with
``feedback_buttons``), through slack-bolt and slack_sdk against the fake Slack: kept once per
person, a 👎 asking "what went wrong?" in a modal (``views.open`` → ``view_submission``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.slack.parse import thread_key
from bot.feedback.service import GONE, THANKS
from tests.adapters.slack.conftest import World, slack_world
from tests.fakes.slack import MENTION, Message


async def feedback_message(world: World, root: Message) -> Message:
    replies = await world.answered(root, 2)
    assert replies[0].shown == "Ada said: how do I deploy?"
    assert replies[1].feedback, "the feedback buttons go under the answer"
    return replies[1]


async def stored(world: World) -> list[tuple[str, str, str]]:
    assert world.runtime is not None
    given = await world.runtime.core.store.feedback_since(0.0, 10)
    return [(f.user_id, f.value, f.note) for f in given]


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_thumbs_show_as_slack_shows_them_and_a_second_click_counts_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    async with slack_world(tmp_path, monkeypatch, mode=mode, feedback=True) as world:  # type: ignore[arg-type]
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} how do I deploy?")
        message = await feedback_message(world, root)
        element = message.feedback[0]
        assert (
            element["positive_button"]["text"]["text"],
            element["negative_button"]["text"]["text"],
        ) == ("👍", "👎")
        assert message.thread_ts == root.ts

        assert (await world.fake.rate("UADA", message, good=True)).acked_in_time
        await world.idle()
        await world.fake.rate("UADA", message, good=True)
        await world.idle()
        assert await stored(world) == [("slack:UADA", "up", "")]
        assert world.fake.api.views == []  # a 👍 asks nothing
        assert world.fake.ephemerals("UADA") == []


async def test_a_thumbs_down_asks_what_went_wrong_in_a_modal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with slack_world(tmp_path, monkeypatch, feedback=True) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} how do I deploy?")
        message = await feedback_message(world, root)

        assert (await world.fake.rate("UADA", message, good=False)).acked_in_time
        await world.fake.wait_for(lambda: len(world.fake.api.views) == 1)
        await world.idle()
        view = world.fake.api.views[0]
        assert view["title"]["text"] == "What went wrong?"

        sent = await world.fake.submit_view("UADA", view, "It named a command that does not exist")
        assert sent.acked_in_time
        await world.fake.wait_for(lambda: world.fake.ephemerals("UADA") == [THANKS])
        assert (world.fake.workspace.ephemerals[0].thread_ts) == root.ts
        assert await stored(world) == [
            ("slack:UADA", "down", "It named a command that does not exist")
        ]


async def test_a_modal_sent_after_its_thread_was_reset_is_answered_plainly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with slack_world(tmp_path, monkeypatch, feedback=True) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} how do I deploy?")
        message = await feedback_message(world, root)
        await world.fake.rate("UADA", message, good=False)
        await world.fake.wait_for(lambda: len(world.fake.api.views) == 1)
        await world.idle()

        key = thread_key("T0FAKE", root.channel, root.ts)
        assert world.runtime is not None
        await world.runtime.core.reset(key, world.adapter.surface(key))
        await world.fake.submit_view("UADA", world.fake.api.views[0], "too late")
        await world.fake.wait_for(lambda: world.fake.ephemerals("UADA") == [GONE])
        assert await stored(world) == [("slack:UADA", "down", "")]


@pytest.mark.parametrize(
    "body",
    [
        {"type": "block_actions"},
        {"type": "view_submission", "user": {"id": "UADA"}, "view": {"private_metadata": "{"}},
        {"type": "view_submission", "user": {"id": "UADA"}, "view": {"private_metadata": "[]"}},
        {"type": "view_submission", "view": {"private_metadata": '{"form": "why:r1"}'}},
        {"type": "view_submission", "user": "UADA", "view": None},
    ],
)
def test_a_view_submission_that_is_not_the_feedback_form_is_ignored(body: object) -> None:
    from adapters.slack.feedback import read_submission

    assert read_submission(body) is None
