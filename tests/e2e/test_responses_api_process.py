"""The real program on OpenAI's Responses API: ``threadline run`` with
``THREADLINE_OPENAI_API=responses`` against the fake server's ``/v1/responses``. Two turns of a
thread, the program restarted between them: the second request carries the reasoning the
model gave in the first, read back from the thread's stored session."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_process_restart import (
    browser,
    free_port,
    open_page,
    threadline,
    until_event,
)
from tests.e2e.test_tools_process import Thread
from tests.fakes.openai_server import FakeOpenAI, Reply

KEY = "sk-responses-e2e-3333SECRET"


async def test_a_thread_on_the_responses_api_keeps_its_reasoning(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        "OPENAI_API_KEY": KEY,
        "THREADLINE_OPENAI_API": "responses",
        "THREADLINE_MODEL": "o4-mini",
    }
    async with FakeOpenAI() as fake, browser() as http:
        env["OPENAI_BASE_URL"] = fake.base_url
        fake.push(Reply("The tide turns at noon."), Reply("Then it ebbs until six."))
        async with threadline(tmp_path, port, **env):
            await open_page(http, base)
            async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                thread = Thread(http, base, ws)
                await thread.say("When does the tide turn?")
                await until_event(ws, lambda e: "The tide turns at noon." in json.dumps(e))
        async with (
            threadline(tmp_path, port, **env),
            http.ws_connect(f"{base}/api/ws?client=t") as ws,
        ):
            thread.ws = ws
            await thread.say("And after that?")
            await until_event(ws, lambda e: "Then it ebbs until six." in json.dumps(e))
    first, second = fake.requests
    assert first.body["store"] is False and second.body["store"] is False
    assert fake.requests[0].headers["Authorization"] == f"Bearer {KEY}"
    items = [
        i for i in second.body["input"] if i.get("role") != "system"
    ]  # the where-and-when note
    assert [i.get("type") or i["role"] for i in items] == ["user", "reasoning", "assistant", "user"]
    assert items[1] == fake.reasoning_issued[0]
    assert items[2] == {"role": "assistant", "content": "The tide turns at noon."}
