"""The adapter's translation: HTTP and WebSocket in, Inbound and clicks to the core, the thread out.

The core is the real one; the model is scripted and time is a manual clock (see conftest). What
the adapter passed on is read back from what the core stored; the whole flow on the runtime
with the demo model is in test_runtime.py and test_browser.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from adapters.playground.state import PlaygroundState
from adapters.playground.surface import PlaygroundSurface, thread_key
from bot.llm.messages import AssistantMessage, ToolResult, UserMessage
from tests.adapters.playground.conftest import (
    IDLE_LIMIT,
    TIMEOUT,
    Playground,
    deploy_then,
    next_event,
    open_playground,
)
from tests.fakes.surface import drive


def is_bot_message(event: dict[str, object]) -> bool:
    message = event.get("message")
    return event["type"] == "message" and isinstance(message, dict) and bool(message["bot"])


def is_note_or(marker: str) -> Callable[[dict[str, Any]], bool]:
    """Matches a private note, or the status line showing ``marker``."""
    return lambda e: e["type"] == "note" or (e["type"] == "status" and e["text"] == marker)


async def test_a_message_starts_a_thread_and_reaches_the_core_translated(
    playground: Playground,
) -> None:
    ws = await playground.socket()
    posted = await playground.say(
        "Plan the launch", event_id="evt-00000001", user_id="u-42", user_name="Ada"
    )
    thread_id = posted["thread_id"]
    await playground.idle()
    await next_event(ws, is_bot_message)

    shown = await playground.thread(thread_id)
    first, reply = shown["messages"]
    author_id = f"playground:{await playground.user_id('u-42')}"  # from the session, not the page
    assert (first["author_id"], first["author_name"], first["bot"], first["text"]) == (
        author_id,
        "Ada",
        False,
        "Plan the launch",
    )
    assert first["id"] == posted["message_id"]
    assert reply["author_name"] == "Threadline" and reply["bot"]
    assert reply["text"] == "Ada said: Plan the launch"
    assert reply["buttons"] == []  # the Stop button goes when the answer is complete
    assert shown["thread"]["title"] == "Plan the launch"
    assert shown["status"] is None

    listed = await (await playground.client.get("/api/threads")).json()
    assert [t["id"] for t in listed["threads"]] == [thread_id]

    # what the core was given: the thread key, the author and the event id
    assert await playground.core.store.has_session(thread_key(thread_id))
    session = await playground.session(thread_id)
    assert session.messages[0] == UserMessage(
        text="Plan the launch", author_id=author_id, author_name="Ada", event_id="evt-00000001"
    )
    assert isinstance(session.messages[1], AssistantMessage)
    assert not await playground.core.store.first_delivery("evt-00000001", playground.clock.now())


async def test_an_accepted_message_is_on_disk_before_the_answer(
    playground: Playground, tmp_path: Path
) -> None:
    playground.model.gate = asyncio.Event()  # the model has not answered yet
    posted = await playground.say("Keep this safe", event_id="evt-00000009")
    # the manual clock has not moved, so no coalesced save ran: this was written at once
    saved = json.loads((tmp_path / "playground.json").read_text())
    (thread,) = saved["threads"]
    assert thread["id"] == posted["thread_id"] and thread["messages"][0]["text"] == "Keep this safe"
    playground.model.gate.set()
    await playground.idle()


async def test_a_second_message_continues_the_thread_and_a_blank_name_is_you(
    playground: Playground,
) -> None:
    thread_id = (await playground.say("one", event_id="evt-00000001"))["thread_id"]
    await playground.idle()
    again = await playground.say(
        "two", thread_id=thread_id, event_id="evt-00000002", user_name="  "
    )
    assert again["thread_id"] == thread_id
    await playground.idle()
    texts = [m["text"] for m in (await playground.thread(thread_id))["messages"]]
    assert texts == ["one", "Ada said: one", "two", "You said: two"]
    session = await playground.session(thread_id)
    said = [(m.text, m.author_name) for m in session.messages if isinstance(m, UserMessage)]
    assert said == [("one", "Ada"), ("two", "You")]


async def test_a_retried_post_writes_nothing_new(playground: Playground) -> None:
    first = await playground.say("hello", event_id="evt-retried1")
    second = await playground.say("hello", event_id="evt-retried1")
    assert second == first
    await playground.idle()  # both deliveries handled
    messages = playground.adapter.state.thread(first["thread_id"]).messages
    assert [m.text for m in messages] == ["hello", "Ada said: hello"]  # the message and one reply
    session = await playground.session(first["thread_id"])
    assert [m.text for m in session.messages if isinstance(m, UserMessage)] == ["hello"]
    assert len(playground.model.requests) == 1


async def test_the_websocket_carries_every_change(playground: Playground) -> None:
    ws = await playground.socket()
    thread = playground.adapter.state.create_thread("live")
    surface = PlaygroundSurface(playground.adapter.state, thread.id)
    message_id = await surface.post("first")
    await surface.edit(message_id, "second")
    await surface.pin(message_id)
    await surface.set_status("thinking…")
    await surface.unpin(message_id)
    await surface.delete(message_id)

    seen = [await next_event(ws) for _ in range(8)]
    assert [e["type"] for e in seen] == [
        "thread",
        "message",
        "thread",
        "message",
        "pins",
        "status",
        "pins",
        "deleted",
    ]
    assert seen[1]["message"]["text"] == "first" and seen[1]["message"]["edits"] == 0
    assert seen[3]["message"]["text"] == "second" and seen[3]["message"]["edits"] == 1
    assert seen[4]["pins"] == [message_id] and seen[6]["pins"] == []
    assert seen[5]["text"] == "thinking…"
    assert seen[7]["message_id"] == message_id
    assert all(e.get("thread_id", thread.id) == thread.id for e in seen)
    assert [e["seq"] for e in seen] == sorted(e["seq"] for e in seen)


async def test_a_click_reaches_the_core_and_the_note_goes_to_the_clicker_only(
    playground: Playground,
) -> None:
    clicker, other = await playground.socket("tab-a"), await playground.socket("tab-b")
    thread_id = (await playground.say("hello"))["thread_id"]
    await playground.idle()
    response = await playground.click(thread_id, "retired:1", user_id="u-7", user_name="Grace")
    assert response.status == 200
    assert (await response.json())["note"] == "This button is no longer active."
    # The next change reaches both tabs, and no note came before it on either.
    await PlaygroundSurface(playground.adapter.state, thread_id).set_status("marker")
    for ws in (clicker, other):
        event = await next_event(ws, is_note_or("marker"))
        assert event == {
            "type": "status",
            "thread_id": thread_id,
            "text": "marker",
            "seq": event["seq"],
        }


async def test_approve_decides_as_the_clicker_and_the_run_goes_on(playground: Playground) -> None:
    clicker, other = await playground.socket("tab-a"), await playground.socket("tab-b")
    playground.model.steps = deploy_then("Deployed!")
    thread_id = (await playground.say("ship it", user_id="u1", user_name="Ada"))["thread_id"]
    await playground.idle()
    approve = await playground.button(thread_id, "Approve")

    refused = await playground.click(thread_id, approve, user_id="u-7", user_name="Grace")
    assert refused.status == 200
    assert "isn't yours to decide" in (await refused.json())["note"]
    assert playground.ran == []

    response = await playground.click(thread_id, approve, user_id="u1", user_name="Ada")
    assert response.status == 200 and (await response.json())["note"] == "Approved."
    await playground.idle()
    assert playground.ran == ["prod"]
    messages = (await playground.thread(thread_id))["messages"]
    card = next(m for m in messages if "`deploy`" in m["text"])
    assert "Approved** by Ada" in card["text"] and card["buttons"] == []
    assert messages[-1]["text"] == "Deployed!"
    session = await playground.session(thread_id)
    result = next(m for m in session.messages if isinstance(m, ToolResult))
    assert result.content == "deployed to prod"
    [decided] = (
        await playground.core.store.approvals_for(thread_key(thread_id), [result.call_id])
    ).values()
    assert (decided.decided_by_id, decided.decided_by_name) == (
        f"playground:{await playground.user_id()}",
        "Ada",
    )

    await PlaygroundSurface(playground.adapter.state, thread_id).set_status("marker")
    for ws in (clicker, other):
        assert (await next_event(ws, is_note_or("marker")))["type"] == "status"


async def test_the_clicked_card_is_updated_even_when_its_id_was_not_stored(
    playground: Playground,
) -> None:
    playground.model.steps = deploy_then("Deployed!")
    thread_id = (await playground.say("ship it"))["thread_id"]
    await playground.idle()
    approve = await playground.button(thread_id, "Approve")
    card = next(m for m in (await playground.thread(thread_id))["messages"] if m["buttons"])
    async with playground.core.store.transaction() as db:  # as if killed before storing it
        await db.execute("UPDATE approvals SET card_id = NULL")
    response = await playground.click(thread_id, approve, message_id=card["id"])
    assert (await response.json())["note"] == "Approved."
    await playground.idle()
    decided = next(
        m for m in (await playground.thread(thread_id))["messages"] if m["id"] == card["id"]
    )
    assert "Approved** by Ada" in decided["text"] and decided["buttons"] == []


async def test_a_slow_click_sends_its_note_later_to_the_clicker_only(
    playground: Playground,
) -> None:
    clicker, other = await playground.socket("tab-a"), await playground.socket("tab-b")
    playground.model.steps = deploy_then("Deployed!")
    thread_id = (await playground.say("ship it"))["thread_id"]
    await playground.idle()
    approve = await playground.button(thread_id, "Approve")
    # Another process holds the database's write lock: the decision waits for it (busy_timeout).
    database = playground.core.settings.database_path
    with contextlib.closing(sqlite3.connect(database, isolation_level=None)) as other_process:
        other_process.execute("BEGIN IMMEDIATE")
        response = await playground.click(thread_id, approve, client_id="tab-a")
        assert response.status == 202 and (await response.json())["note"] is None
        other_process.execute("ROLLBACK")
    note = await next_event(clicker, lambda e: e["type"] == "note")
    assert note == {"type": "note", "thread_id": thread_id, "text": "Approved."}
    await playground.idle()
    assert playground.ran == ["prod"]
    await PlaygroundSurface(playground.adapter.state, thread_id).set_status("marker")
    assert (await next_event(other, is_note_or("marker")))["type"] == "status"


async def test_a_core_failure_is_shown_and_clears_the_status(playground: Playground) -> None:
    ws = await playground.socket()
    playground.model.steps = [RuntimeError("the model client broke")]
    thread_id = (await playground.say("explode"))["thread_id"]
    error = await next_event(ws, lambda e: e["type"] == "error")
    assert error["thread_id"] == thread_id and "went wrong" in error["text"]
    assert (await playground.thread(thread_id))["status"] is None


async def test_bad_requests_are_refused_with_a_reason(playground: Playground) -> None:
    client = playground.client
    good = {"text": "hi", "event_id": "evt-00000009"}
    cases = [
        (client.post("/api/messages", json=good | {"text": "  \n "}), 400),
        (client.post("/api/messages", json=good | {"event_id": "short"}), 400),
        (client.post("/api/messages", json=good | {"user_name": "x" * 41}), 400),
        (client.post("/api/messages", json=good | {"thread_id": "nope"}), 404),
        (
            client.post(
                "/api/messages", data=json.dumps(good), headers={"Content-Type": "text/plain"}
            ),
            415,
        ),
        (client.post("/api/messages", json=good, headers={"Origin": "http://evil.example"}), 403),
        (client.post("/api/actions", json={"thread_id": "nope", "action_id": "a"}), 404),
        (client.get("/api/threads/nope"), 404),
        (client.get("/api/ws", headers={"Origin": "http://evil.example"}), 403),
    ]
    for request, status in cases:
        response = await request
        assert response.status == status, await response.text()
        assert "error" in await response.json()
    assert (await client.get("/api/threads")).status == 200
    assert playground.adapter.state.threads() == []


async def test_the_page_and_its_files_are_served(playground: Playground) -> None:
    page = await playground.client.get("/")
    assert page.status == 200 and "<title>Threadline playground</title>" in await page.text()
    for name in ("app.js", "markdown.js", "style.css"):
        assert (await playground.client.get(f"/static/{name}")).status == 200
    info = await (await playground.client.get("/api/info")).json()
    assert info == {
        "bot_name": "Threadline",
        "model_label": "scripted model",
        "user_id": await playground.user_id(),
    }
    assert (await playground.client.get("/static/index.html")).status == 404
    assert (await playground.client.get("/static/..%2Fserver.py")).status == 404


async def test_stop_lets_a_running_answer_finish_and_saves_it(tmp_path: Path) -> None:
    async with open_playground(tmp_path) as playground:
        gate = playground.model.gate = asyncio.Event()
        client, adapter = playground.client, playground.adapter
        ws = await playground.socket()
        thread_id = (await playground.say("wait for it", event_id="evt-stopping"))["thread_id"]
        await next_event(ws, lambda e: e["type"] == "status" and e["text"] == "thinking…")
        stopping = asyncio.create_task(adapter.stop())
        refused = await client.post(
            "/api/messages", json={"text": "too late", "event_id": "evt-too-late"}
        )
        assert refused.status == 503
        gate.set()
        await drive(playground.clock, stopping, limit=IDLE_LIMIT)
        types = []
        async for message in ws:  # the changes still queued, then the server hangs up
            types.append(json.loads(message.data).get("type"))
        assert ws.closed and "message" in types
        session = await playground.session(thread_id)
        assert [m.text for m in session.messages] == ["wait for it", "Ada said: wait for it"]  # type: ignore[union-attr]

    reloaded = PlaygroundState(tmp_path / "playground.json")
    await reloaded.load()
    texts = [m.text for m in reloaded.thread(thread_id).messages]
    assert texts == ["wait for it", "Ada said: wait for it"]


async def test_stop_cancels_an_answer_that_does_not_finish_in_time(tmp_path: Path) -> None:
    async with open_playground(tmp_path, stop_grace=0.05) as playground:
        playground.model.gate = asyncio.Event()  # never set: the model never answers
        ws = await playground.socket()
        thread_id = (await playground.say("never answered", event_id="evt-never-1"))["thread_id"]
        await next_event(ws, lambda e: e["type"] == "status" and e["text"] == "thinking…")
        await asyncio.wait_for(playground.adapter.stop(), TIMEOUT)
        session = await playground.session(thread_id)
        assert [m.text for m in session.messages] == ["never answered"]  # type: ignore[union-attr]
    saved = json.loads((tmp_path / "playground.json").read_text())
    assert [m["text"] for m in saved["threads"][0]["messages"]] == ["never answered"]
    assert saved["threads"][0]["id"] == thread_id
