"""The real ``threadline run`` with its playground, as an end-to-end test drives it: a process
on a free port that talks to a fake OpenAI server, a browser with the page open and its
WebSocket of live changes, and the few API calls a person makes (say something, click a
button, read the thread). ``mcp_server_config`` writes the ``threadline.toml`` that gives the
process a stdio MCP server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from tests.e2e.test_process_restart import browser, free_port, open_page, threadline, until_event
from tests.fakes.openai_server import FakeOpenAI

Event = dict[str, Any]


@dataclass
class Playground:
    """One running program, seen from one browser (``http``, with the page's session cookie)
    that listens on ``ws`` as the page with client id ``t``."""

    process: asyncio.subprocess.Process
    http: aiohttp.ClientSession
    base: str
    ws: aiohttp.ClientWebSocketResponse

    async def say(
        self, text: str, event_id: str, user: Mapping[str, str], thread_id: str | None = None
    ) -> str:
        """``user`` writes ``text`` in a new thread (or in ``thread_id``); the thread's id."""
        sent = {"text": text, "event_id": event_id, **user}
        if thread_id is not None:
            sent["thread_id"] = thread_id
        async with self.http.post(f"{self.base}/api/messages", json=sent) as resp:
            assert resp.status == 202, await resp.text()
            said: str = (await resp.json())["thread_id"]
            return said

    async def click(self, thread_id: str, action_id: str, user: Mapping[str, str]) -> Event:
        """``user`` clicks the button ``action_id`` in ``thread_id``; what the API answers."""
        clicked = {"thread_id": thread_id, "action_id": action_id, "client_id": "t", **user}
        async with self.http.post(f"{self.base}/api/actions", json=clicked) as resp:
            assert resp.status in (200, 202), await resp.text()
            answer: Event = await resp.json()
            return answer

    async def until(self, awaited: str | Callable[[Event], bool]) -> Event:
        """The first live change that shows the words ``awaited`` (or that it matches)."""
        if isinstance(awaited, str):
            words = awaited
            return await until_event(self.ws, lambda e: words in json.dumps(e))
        return await until_event(self.ws, awaited)

    async def messages(self, thread_id: str) -> list[Event]:
        """The thread's messages as the playground keeps them."""
        async with self.http.get(f"{self.base}/api/threads/{thread_id}") as resp:
            assert resp.status == 200, await resp.text()
            messages: list[Event] = (await resp.json())["messages"]
            return messages


@asynccontextmanager
async def playground(
    tmp_path: Path,
    model: FakeOpenAI,
    *,
    http: aiohttp.ClientSession | None = None,
    port: int | None = None,
    **settings: str,
) -> AsyncIterator[Playground]:
    """``threadline run`` in ``tmp_path`` with ``model`` as its OpenAI server and ``settings``
    (environment variables), the page opened in ``http`` (a browser of its own when none is
    given; pass one to keep the session across a restart) and its WebSocket connected. It
    listens on ``port`` (a free one when none is given; pass one to keep the address, which
    links handed out before a restart lead back to)."""
    port = port or free_port()
    base = f"http://127.0.0.1:{port}"
    async with AsyncExitStack() as stack:
        if http is None:
            http = await stack.enter_async_context(browser())
        process = await stack.enter_async_context(
            threadline(
                tmp_path,
                port,
                OPENAI_BASE_URL=model.base_url,
                OPENAI_API_KEY="sk-test",
                **settings,
            )
        )
        await open_page(http, base)
        ws = await stack.enter_async_context(http.ws_connect(f"{base}/api/ws?client=t"))
        yield Playground(process, http, base, ws)


def mcp_server_config(
    tmp_path: Path,
    name: str,
    command: Sequence[str],
    *,
    never_ask: Iterable[str] = (),
    more: str = "",
) -> None:
    """``tmp_path/threadline.toml`` with the stdio MCP server ``name`` started as ``command``
    (20 s for a call), the tools in ``never_ask`` run without an approval card, and ``more``
    (TOML) after them."""
    lines = [
        f"[mcp_servers.{name}]",
        f"command = {json.dumps(command[0])}",
        f"args = {json.dumps(list(command[1:]))}",
        "timeout_s = 20",
    ]
    for tool in never_ask:
        lines += [f"[tools.{json.dumps(tool)}]", 'approval = "never"']
    (tmp_path / "threadline.toml").write_text("\n".join(lines) + "\n" + more)
