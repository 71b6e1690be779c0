"""The adapter's translation: HTTP and WebSocket in, Inbound and clicks to the core, the thread out.

These tests use a stand-in with the core's two entry points (see conftest); the whole flow on
the real core is in test_runtime.py and test_browser.py.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from adapters.playground import PlaygroundAdapter
from adapters.playground.surface import PlaygroundSurface
from tests.adapters.playground.conftest import Playground, StandInCore, next_event


def is_bot_message(event: dict[str, object]) -> bool:
    message = event.get("message")
    return event["type"] == "message" and isinstance(message, dict) and bool(message["bot"])


async def test_a_message_starts_a_thread_and_reaches_the_core_translated(playground: Playground) -> None:
    ws = await playground.socket()
    posted = await playground.say("Plan the launch", event_id="evt-00000001", user_id="u-42", user_name="Ada")
    thread_id = posted["thread_id"]
    await next_event(ws, is_bot_message)

    shown = await playground.thread(thread_id)
    first, reply = shown["messages"]
    assert (first["author_id"], first["author_name"], first["bot"], first["text"]) == (
        "playground:u-42", "Ada", False, "Plan the launch",
    )
    assert first["id"] == posted["message_id"]
    assert reply["author_name"] == "Threadline" and reply["bot"]
    assert reply["text"] == (
        f"key=playground:{thread_id} author=playground:u-42 name=Ada event=evt-00000001 text=Plan the launch"
    )
    assert [b["label"] for b in reply["buttons"]] == ["Approve", "Deny"]
    assert shown["thread"]["title"] == "Plan the launch"
    assert shown["status"] is None

    listed = await (await playground.client.get("/api/threads")).json()
    assert [t["id"] for t in listed["threads"]] == [thread_id]


async def test_a_second_message_continues_the_thread_and_a_blank_name_is_you(playground: Playground) -> None:
    ws = await playground.socket()
    thread_id = (await playground.say("one", event_id="evt-00000001"))["thread_id"]
    await next_event(ws, is_bot_message)
    again = await playground.say("two", thread_id=thread_id, event_id="evt-00000002", user_name="  ")
    assert again["thread_id"] == thread_id
    await next_event(ws, is_bot_message)
    texts = [m["text"] for m in (await playground.thread(thread_id))["messages"]]
    assert texts[0] == "one" and texts[2] == "two"
    assert "name=You event=evt-00000002 text=two" in texts[3]


async def test_a_retried_post_writes_nothing_new(playground: Playground) -> None:
    first = await playground.say("hello", event_id="evt-retried1")
    second = await playground.say("hello", event_id="evt-retried1")
    assert second == first
    await playground.adapter.stop()  # waits for both answers
    messages = playground.adapter.state.thread(first["thread_id"]).messages
    assert [m.text for m in messages][0] == "hello"
    assert len(messages) == 2  # the message and one reply


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
        "thread", "message", "thread", "message", "pins", "status", "pins", "deleted",
    ]
    assert seen[1]["message"]["text"] == "first" and seen[1]["message"]["edits"] == 0
    assert seen[3]["message"]["text"] == "second" and seen[3]["message"]["edits"] == 1
    assert seen[4]["pins"] == [message_id] and seen[6]["pins"] == []
    assert seen[5]["text"] == "thinking…"
    assert seen[7]["message_id"] == message_id
    assert all(e.get("thread_id", thread.id) == thread.id for e in seen)
    assert [e["seq"] for e in seen] == sorted(e["seq"] for e in seen)


async def test_a_click_reaches_the_core_and_the_note_goes_to_the_clicker_only(playground: Playground) -> None:
    clicker, other = await playground.socket("tab-a"), await playground.socket("tab-b")
    thread_id = (await playground.say("need approval"))["thread_id"]
    await next_event(other, is_bot_message)
    response = await playground.client.post(
        "/api/actions",
        json={"thread_id": thread_id, "action_id": "approve:1", "user_id": "u-7",
              "user_name": "Grace", "client_id": "tab-a"},
    )
    assert response.status == 200
    assert (await response.json())["note"] == (
        f"Grace (playground:u-7) clicked approve:1 in playground:{thread_id}"
    )
    # The next change reaches both tabs, and no note came before it on either.
    await PlaygroundSurface(playground.adapter.state, thread_id).set_status("marker")
    for ws in (clicker, other):
        event = await next_event(ws, lambda e: e["type"] in ("note", "status") and e.get("text") != "thinking…"
                                 and e.get("text") is not None)
        assert event == {"type": "status", "thread_id": thread_id, "text": "marker", "seq": event["seq"]}


async def test_a_slow_click_sends_its_note_later_to_the_clicker_only(playground: Playground) -> None:
    clicker, other = await playground.socket("tab-a"), await playground.socket("tab-b")
    thread_id = (await playground.say("slow"))["thread_id"]
    await next_event(other, is_bot_message)
    playground.core.gate = asyncio.Event()
    response = await playground.client.post(
        "/api/actions",
        json={"thread_id": thread_id, "action_id": "deny:1", "user_id": "u-7", "client_id": "tab-a"},
    )
    assert response.status == 202 and (await response.json())["note"] is None
    playground.core.gate.set()
    note = await next_event(clicker, lambda e: e["type"] == "note")
    assert note["text"] == f"You (playground:u-7) clicked deny:1 in playground:{thread_id}"
    await PlaygroundSurface(playground.adapter.state, thread_id).set_status("marker")
    event = await next_event(other, lambda e: e["type"] == "note" or e.get("text") == "marker")
    assert event["type"] == "status"


async def test_a_core_failure_is_shown_and_clears_the_status(playground: Playground) -> None:
    ws = await playground.socket()
    thread_id = (await playground.say("explode"))["thread_id"]
    error = await next_event(ws, lambda e: e["type"] == "error")
    assert error["thread_id"] == thread_id and "went wrong" in error["text"]
    assert (await playground.thread(thread_id))["status"] is None


async def test_bad_requests_are_refused_with_a_reason(playground: Playground) -> None:
    client = playground.client
    good = {"text": "hi", "event_id": "evt-00000009", "user_id": "u1"}
    cases = [
        (client.post("/api/messages", json=good | {"text": "  \n "}), 400),
        (client.post("/api/messages", json=good | {"event_id": "short"}), 400),
        (client.post("/api/messages", json=good | {"user_id": "a b"}), 400),
        (client.post("/api/messages", json=good | {"thread_id": "nope"}), 404),
        (client.post("/api/messages", data=json.dumps(good), headers={"Content-Type": "text/plain"}), 415),
        (client.post("/api/messages", json=good, headers={"Origin": "http://evil.example"}), 403),
        (client.post("/api/actions", json={"thread_id": "nope", "action_id": "a", "user_id": "u1"}), 404),
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
    assert info == {"bot_name": "Threadline", "model_label": "stand-in model"}


async def test_stop_lets_a_running_answer_finish_and_saves_it(tmp_path: Path) -> None:
    core = StandInCore(gate=asyncio.Event())
    adapter = PlaygroundAdapter(core, tmp_path)  # type: ignore[arg-type]
    app = web.Application()
    adapter.install(app)
    await adapter.start()
    async with TestClient(TestServer(app)) as client:
        ws = await client.ws_connect("/api/ws")
        response = await client.post(
            "/api/messages", json={"text": "wait for it", "event_id": "evt-stopping", "user_id": "u1"}
        )
        thread_id = (await response.json())["thread_id"]
        await next_event(ws, lambda e: e["type"] == "status" and e["text"] == "thinking…")
        stopping = asyncio.create_task(adapter.stop())
        refused = await client.post(
            "/api/messages", json={"text": "too late", "event_id": "evt-too-late", "user_id": "u1"}
        )
        assert refused.status == 503
        core.gate.set()
        await asyncio.wait_for(stopping, 5)
        texts = []
        async for message in ws:  # the changes still queued, then the server hangs up
            texts.append(json.loads(message.data).get("type"))
        assert ws.closed and "message" in texts

    restarted = PlaygroundAdapter(StandInCore(), tmp_path)  # type: ignore[arg-type]
    await restarted.start()
    texts = [m.text for m in restarted.state.thread(thread_id).messages]
    assert texts[0] == "wait for it" and texts[1].endswith("text=wait for it")
    await restarted.stop()


async def test_stop_cancels_an_answer_that_does_not_finish_in_time(tmp_path: Path) -> None:
    core = StandInCore(gate=asyncio.Event())
    adapter = PlaygroundAdapter(core, tmp_path, stop_grace=0.05)  # type: ignore[arg-type]
    app = web.Application()
    adapter.install(app)
    await adapter.start()
    async with TestClient(TestServer(app)) as client:
        response = await client.post(
            "/api/messages", json={"text": "never answered", "event_id": "evt-never-1", "user_id": "u1"}
        )
        thread_id = (await response.json())["thread_id"]
        await asyncio.wait_for(adapter.stop(), 5)
    saved = json.loads((tmp_path / "playground.json").read_text())
    assert [m["text"] for m in saved["threads"][0]["messages"]] == ["never answered"]
    assert saved["threads"][0]["id"] == thread_id
