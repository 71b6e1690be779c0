"""The playground on the real runtime and core, with the offline demo model, over HTTP."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from adapters.playground import PlaygroundAdapter
from adapters.playground.surface import PlaygroundSurface, thread_key
from adapters.runtime import Runtime
from tests.adapters.playground.conftest import browser, demo_runtime, next_event


@pytest.fixture
async def runtime(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Runtime]:
    async with demo_runtime(tmp_path, monkeypatch, chunk_delay_s=0) as runtime:
        yield runtime


def playground_of(runtime: Runtime) -> PlaygroundAdapter:
    return next(a for a in runtime.adapters if isinstance(a, PlaygroundAdapter))


async def say(
    http: aiohttp.ClientSession,
    url: str,
    text: str,
    thread_id: str | None = None,
    event_id: str | None = None,
) -> dict[str, Any]:
    body = {
        "thread_id": thread_id,
        "text": text,
        "event_id": event_id or uuid.uuid4().hex,
        "user_name": "Ada",
    }
    async with http.post(f"{url}/api/messages", json=body) as response:
        assert response.status == 202, await response.text()
        answer: dict[str, Any] = await response.json()
        return answer


async def test_a_message_gets_a_streamed_reply_from_the_demo_model(runtime: Runtime) -> None:
    adapter = playground_of(runtime)
    async with browser(runtime.url) as http:
        async with http.get(f"{runtime.url}/api/info") as response:
            assert (await response.json())["model_label"] == runtime.core.model_label
        ws = await http.ws_connect(f"{runtime.url}/api/ws?client=tab-a")
        thread_id = (await say(http, runtime.url, "Create a file called notes.md"))["thread_id"]
        await next_event(ws, lambda e: e["type"] == "message" and e["message"]["bot"])
        await asyncio.wait_for(adapter.wait_idle(), 30)

        thread = adapter.state.thread(thread_id)
        bot = [m for m in thread.messages if m.bot]
        assert (
            thread.messages[0].text == "Create a file called notes.md"
            and thread.messages[0].author_name == "Ada"
        )
        assert bot and all(m.author_name == "Threadline" for m in bot)
        assert any(m.edits > 0 for m in bot), "the reply was not streamed by editing"
        assert adapter.state.status(thread_id) is None
        assert await runtime.core.store.has_session(thread_key(thread_id))
        await ws.close()


async def test_a_retried_post_is_answered_once(runtime: Runtime) -> None:
    adapter = playground_of(runtime)
    async with browser(runtime.url) as http:
        first = await say(http, runtime.url, "Once, please", event_id="evt-twice-0001")
        second = await say(http, runtime.url, "Once, please", event_id="evt-twice-0001")
        assert second == first
        await asyncio.wait_for(adapter.wait_idle(), 30)
    messages = adapter.state.thread(first["thread_id"]).messages
    assert [m.text for m in messages if not m.bot] == ["Once, please"]
    session = await runtime.core.store.load_session(thread_key(first["thread_id"]), 0.0)
    assert [m.role for m in session.messages].count("user") == 1


async def test_a_click_reaches_the_core_and_only_the_clicker_gets_the_note(
    runtime: Runtime,
) -> None:
    adapter = playground_of(runtime)
    async with browser(runtime.url) as http:
        clicker = await http.ws_connect(f"{runtime.url}/api/ws?client=tab-a")
        other = await http.ws_connect(f"{runtime.url}/api/ws?client=tab-b")
        thread_id = (await say(http, runtime.url, "Hi"))["thread_id"]
        await asyncio.wait_for(adapter.wait_idle(), 30)
        click = {
            "thread_id": thread_id,
            "action_id": "approve:does-not-exist",
            "user_name": "Grace",
            "client_id": "tab-a",
        }
        async with http.post(f"{runtime.url}/api/actions", json=click) as response:
            assert response.status == 200
            note = (await response.json())["note"]
        assert note  # the core's private answer for this click
        await PlaygroundSurface(adapter.state, thread_id).set_status("marker")
        for ws in (clicker, other):
            event = await next_event(ws, lambda e: e["type"] == "note" or e.get("text") == "marker")
            assert event["type"] == "status"
        await clicker.close()
        await other.close()
