"""``/threadline …`` typed in the playground: the answers Slack and Discord give, for the
person alone, on the thread the page has open; nothing is written in the thread."""

from __future__ import annotations

import asyncio
from typing import Any

from adapters.playground.commands import NO_THREAD
from adapters.playground.surface import thread_key
from bot.api.commands import RESET_DONE, STOPPED, USAGE
from bot.api.inbound import Author
from tests.adapters.playground.conftest import Playground, next_event

ADA = Author("playground:someone", "Ada")


async def command(
    playground: Playground, text: str, thread_id: str | None, event_id: str
) -> dict[str, Any]:
    response = await playground.client.post(
        "/api/messages",
        json={"thread_id": thread_id, "text": text, "event_id": event_id, "user_name": "Ada"},
    )
    assert response.status == 200, await response.text()
    body: dict[str, Any] = await response.json()
    assert body["thread_id"] == thread_id
    return body


async def test_commands_get_the_answers_other_platforms_give(playground: Playground) -> None:
    thread_id = (await playground.say("hello", event_id="evt-cmd-0001"))["thread_id"]
    await playground.idle()
    key = thread_key(thread_id)

    status = await command(playground, "/threadline status", thread_id, "evt-cmd-0002")
    assert status["note"] == await playground.core.describe(key)
    assert status["note"].startswith("Model: ") and "Messages: 2" in status["note"]
    model = await command(playground, "  /Threadline model ", thread_id, "evt-cmd-0003")
    assert model["note"] == await playground.core.choose_model(key, "", ADA)
    assert model["note"] == "Model here: gpt-4o-mini (THREADLINE_MODEL)."
    nothing = await command(playground, "/threadline stop", thread_id, "evt-cmd-0004")
    assert nothing["note"] == STOPPED["nothing"]

    texts = [m["text"] for m in (await playground.thread(thread_id))["messages"]]
    assert texts == ["hello", "Ada said: hello"], "a command is not written in the thread"
    assert len(playground.model.requests) == 1

    reset = await command(playground, "/threadline reset", thread_id, "evt-cmd-0005")
    assert reset["note"] == RESET_DONE
    assert not (await playground.session(thread_id)).messages


async def test_stop_typed_in_the_thread_stops_its_run(playground: Playground) -> None:
    gate = playground.model.gate = asyncio.Event()  # the model is slow to answer
    ws = await playground.socket()
    thread_id = (await playground.say("take your time", event_id="evt-cmd-0101"))["thread_id"]
    await next_event(ws, lambda e: e["type"] == "status" and e["text"] == "thinking…")
    stopping = await command(playground, "/threadline stop", thread_id, "evt-cmd-0102")
    assert stopping["note"] == STOPPED["stopping"]
    gate.set()
    await playground.idle()
    texts = [m["text"] for m in (await playground.thread(thread_id))["messages"]]
    assert texts == ["take your time", "_Stopped by Ada._"]


async def test_bad_commands_say_what_is_accepted(playground: Playground) -> None:
    unknown = await command(playground, "/threadline frobnicate", None, "evt-cmd-0201")
    assert unknown["note"] == f"I don't know `frobnicate`. I know:\n{USAGE}"
    bare = await command(playground, "/threadline", None, "evt-cmd-0202")
    assert bare["note"] == f"Say what to do:\n{USAGE}"
    no_thread = await command(playground, "/threadline status", None, "evt-cmd-0203")
    assert no_thread["note"] == NO_THREAD
    missing = await playground.client.post(
        "/api/messages",
        json={"thread_id": "nope", "text": "/threadline status", "event_id": "evt-cmd-0204"},
    )
    assert missing.status == 404 and (await missing.json())["error"] == "no such thread"
    assert (await (await playground.client.get("/api/threads")).json())["threads"] == []
    assert playground.model.requests == []
