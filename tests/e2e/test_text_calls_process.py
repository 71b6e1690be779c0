"""The real program with a local model that writes its tool calls as text: ``threadline run``
with ``THREADLINE_TEXT_TOOL_CALLS=on``, a fake OpenAI server streaming ``<tool_call>…`` in the
content (as vLLM does for Qwen without a tool-call parser), and a person in the playground. The
call gets its approval card, runs once approved, and its text is never shown in the thread."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp

from bot.llm.wire import from_data
from tests.e2e.test_process_restart import WAIT, browser, free_port, open_page, threadline
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.web_server import FakeWeb

USER = {"user_id": "alice", "user_name": "Alice"}
WRITTEN = 'Looking it up.\n<tool_call>\n{"name": "ticket", "arguments": {"id": 42,}}\n</tool_call>'


class Page:
    """Alice's playground thread, and every event the page was sent."""

    def __init__(
        self, http: aiohttp.ClientSession, base: str, ws: aiohttp.ClientWebSocketResponse
    ) -> None:
        self.http, self.base, self.ws = http, base, ws
        self.thread: str | None = None
        self.seen: list[str] = []

    async def say(self, text: str) -> None:
        body = {"text": text, "event_id": "event-text-calls-1", **USER}
        async with self.http.post(f"{self.base}/api/messages", json=body) as resp:
            assert resp.status == 202, await resp.text()
            self.thread = (await resp.json())["thread_id"]

    async def until(self, words: str, *, buttons: bool = False) -> dict[str, Any]:
        async with asyncio.timeout(WAIT):
            async for frame in self.ws:
                self.seen.append(frame.data)
                event = json.loads(frame.data)
                message = event.get("message") or {}
                shown = event.get("type") == "message" and words in json.dumps(message)
                if shown and (not buttons or message.get("buttons")):
                    return dict(message)
        raise AssertionError("the page's connection closed first")

    async def click(self, card: dict[str, Any], label: str) -> None:
        action = next(b for b in card["buttons"] if b["label"] == label)["action_id"]
        body = {"thread_id": self.thread, "action_id": action, **USER}
        async with self.http.post(f"{self.base}/api/actions", json=body) as resp:
            assert (await resp.json())["note"] == "Approved."


async def test_a_call_written_as_text_asks_runs_and_is_never_shown(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with FakeWeb() as site, FakeOpenAI() as fake, browser() as http:
        (tmp_path / "threadline.toml").write_text(
            '[custom_tools.ticket]\ndescription = "Look a ticket up."\n'
            f'http = {{ url = "{site.base}/echo/tickets/{{id}}" }}\n'
            'parameters.id = { type = "integer" }\n'
        )
        fake.push(Reply(WRITTEN, text_chunk_chars=4), Reply("Ticket 42 is open."))
        env = {
            "OPENAI_BASE_URL": fake.base_url,
            "OPENAI_API_KEY": "sk-test",
            "THREADLINE_MODEL": "qwen2.5",
            "THREADLINE_TEXT_TOOL_CALLS": "on",
        }
        async with threadline(tmp_path, port, **env):
            await open_page(http, base)
            async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                page = Page(http, base, ws)
                await page.say("What does ticket 42 say?")
                card = await page.until("ticket", buttons=True)
                assert "`ticket`" in card["text"] and '"id": 42' in card["text"]
                assert site.requests == []  # nothing runs before the click
                await page.click(card, "Approve")
                await page.until("Ticket 42 is open.")
        first, second = fake.requests
    assert site.requests[0]["path"] == "/echo/tickets/42"  # type: ignore[index]
    assert any("Looking it up." in seen for seen in page.seen)
    assert not any("tool_call" in seen or '"arguments"' in seen for seen in page.seen)
    asked = next(m for m in second.messages if m["role"] == "assistant")
    assert asked["content"] == "Looking it up.\n"
    assert asked["tool_calls"][0]["function"] == {"name": "ticket", "arguments": '{"id": 42}'}
    assert "/echo/tickets/42" in from_data(second.messages[-1]["content"])
    assert "ticket" in {t["function"]["name"] for t in first.body["tools"]}
