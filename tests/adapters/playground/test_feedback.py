"""👍 / 👎 in the playground: two buttons under the answer, a 👎 answered by the page's
one-line "what went wrong?" (``/api/explain``), kept once per person, bad input refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.feedback.service import GONE, THANKS
from tests.adapters.playground.conftest import Playground, open_playground


@pytest.fixture
async def playground(tmp_path: Path) -> AsyncIterator[Playground]:
    async with open_playground(tmp_path, feedback=True) as playground:
        yield playground


async def stored(playground: Playground) -> list[tuple[str, str, str]]:
    given = await playground.core.store.feedback_since(0.0, 10)
    return [(f.user_name, f.value, f.note) for f in given]


async def explain(playground: Playground, form_id: object, text: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    response = await playground.client.post(
        "/api/explain", json={"form_id": form_id, "text": text, "user_name": "Ada"}
    )
    return response.status, await response.json()


async def test_a_thumbs_down_asks_why_and_keeps_the_line(playground: Playground) -> None:
    thread_id = (await playground.say("how do I deploy?"))["thread_id"]
    await playground.idle()
    up, down = await playground.button(thread_id, "👍"), await playground.button(thread_id, "👎")

    answer = await (await playground.click(thread_id, up)).json()
    assert answer == {"note": None, "ask": None}
    answer = await (await playground.click(thread_id, down)).json()
    assert answer["note"] is None and answer["ask"]

    assert await explain(playground, answer["ask"], "wrong target") == (200, {"note": THANKS})
    assert await stored(playground) == [("Ada", "down", "wrong target")]

    reset = await playground.client.post(
        "/api/messages",
        json={"thread_id": thread_id, "text": "/threadline reset", "event_id": "event-0002"},
    )
    assert reset.status == 200, await reset.text()
    assert await explain(playground, answer["ask"], "later") == (200, {"note": GONE})


async def test_a_bad_explain_is_refused_and_keeps_nothing(playground: Playground) -> None:
    status, body = await explain(playground, "", "x")
    assert status == 400 and body["error"]
    status, body = await explain(playground, "why:r1", "x" * 3000)
    assert status == 400
    assert await stored(playground) == []
