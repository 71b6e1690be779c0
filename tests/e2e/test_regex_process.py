"""The real program while a model greps a file built to make a backtracking matcher run for
ages: ``threadline run`` with a fake OpenAI server scripting the calls (write the file, grep
it), ``/healthz`` and another thread answering while that call runs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bot.llm.wire import from_data
from tests.e2e.test_process_restart import browser, free_port, open_page, threadline
from tests.e2e.test_tools_process import Thread
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply, Response

EVIL = "a" * 200_000 + "!"
"""Python's re needs about 2^200000 steps to find no match of (a+)+$ here."""
PATTERN = "(a+)+$"
HEALTHZ_BOUND_S = 2.0
"""Generous: it answers in milliseconds; the backtracking matcher would hold it for ages."""


@dataclass
class GrepModel:
    """The model of both threads, by what each conversation holds: in the grep thread, write the
    file, grep it, then say what grep found; in any other, answer ``pong``. It answers
    ``most`` requests, then fails the test rather than loop."""

    most: int = 12
    calls: int = 0
    grep_started: asyncio.Event = field(default_factory=asyncio.Event)
    on_grep: Callable[[], None] = lambda: None

    def __call__(self, body: dict[str, Any]) -> Response:
        self.calls += 1
        assert self.calls <= self.most, "the model was asked more often than the script allows"
        messages = body["messages"]
        users = [m["content"] for m in messages if m["role"] == "user"]
        last = messages[-1]
        if "grep" not in str(users[0]):
            return Reply("pong")
        if last["role"] == "user":
            return Reply(calls=[FakeCall("write_file", {"path": "evil.txt", "content": EVIL})])
        result = from_data(str(last["content"]))
        if result.startswith("Wrote"):
            self.grep_started.set()
            self.on_grep()
            return Reply(calls=[FakeCall("grep", {"pattern": PATTERN, "path": "evil.txt"})])
        return Reply(f"grep said: {result}")


async def healthz(http: aiohttp.ClientSession, base: str) -> float:
    """Seconds ``/healthz`` took to answer 200."""
    start = time.monotonic()
    async with asyncio.timeout(HEALTHZ_BOUND_S), http.get(f"{base}/healthz") as resp:
        assert resp.status == 200, await resp.text()
    return time.monotonic() - start


async def test_a_backtracking_pattern_does_not_hold_the_bot(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    model = GrepModel()
    async with FakeOpenAI(default=model) as fake, browser() as http:
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
        async with threadline(tmp_path, port, **env):
            await open_page(http, base)
            async with (
                http.ws_connect(f"{base}/api/ws?client=a") as ws_a,
                http.ws_connect(f"{base}/api/ws?client=b") as ws_b,
            ):
                grepping, other = Thread(http, base, ws_a), Thread(http, base, ws_b)
                other._n = 100  # event ids of its own (a repeated one is a retry)
                await grepping.say("Write the file, then grep it")
                async with asyncio.timeout(30):
                    await model.grep_started.wait()
                # the grep call is under way (or done): the bot answers everyone meanwhile
                took = await healthz(http, base)
                await other.say("ping")
                await other.shows("pong")
                await grepping.shows(f"No matches for '{PATTERN}' in 'evil.txt'.")
        assert took < HEALTHZ_BOUND_S
        assert model.calls == 4, [r.messages[-1] for r in fake.requests]
