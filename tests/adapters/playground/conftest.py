"""A playground adapter on the real core, served on a test server, and helpers to read its
WebSocket.

The core is the real one (SQLite store, built-in tools and a ``deploy`` tool that needs
approval); only the world is faked: the model is scripted (it echoes who said what), time is a
:class:`ManualClock` that :meth:`Playground.idle` moves while the core works (the reply's final
edit waits out the playground's edit interval).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import ClientResponse, ClientWebSocketResponse, web
from aiohttp.test_utils import TestClient, TestServer

from adapters.platforms import Platforms
from adapters.playground import PlaygroundAdapter
from adapters.playground.access import COOKIE
from adapters.playground.surface import thread_key
from adapters.runtime import Runtime
from bot.config import Settings
from bot.core import Core
from bot.infra.clock import ManualClock, SystemClock
from bot.llm.messages import UserMessage
from bot.llm.model import ModelPiece, ModelRequest
from bot.llm.openai_model import build_openai_model
from bot.sessions.model import Session
from bot.storage.sqlite.store import SqliteStore
from bot.tools import ToolContext, ToolRegistry, tool
from bot.tools.builtin import builtin_tools
from tests.fakes.scripted_model import ScriptedModel, Step, call, step, text
from tests.fakes.surface import drive

TIMEOUT = 5.0
IDLE_LIMIT = 60.0
"""Fake seconds :meth:`Playground.idle` may move the clock before it gives up."""


def echo(request: ModelRequest) -> Step:
    """Answers with who said what last: ``Ada said: hello``."""
    last = next(m for m in reversed(request.messages) if isinstance(m, UserMessage))
    return text(f"{last.author_name} said: ", last.text)


def deploy_then(answer: str, target: str = "prod") -> list[Step]:
    """The model calls ``deploy`` (which waits for approval), then answers ``answer``."""
    return [step(call("deploy", {"target": target})), text(answer)]


@dataclass
class GatedModel(ScriptedModel):
    """A scripted model that, while ``gate`` is set to an unset event, waits for it before
    answering (a model server that is slow to answer)."""

    gate: asyncio.Event | None = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        if self.gate is not None:
            await self.gate.wait()
        async for piece in super().stream(request):
            yield piece


@dataclass
class Playground:
    adapter: PlaygroundAdapter
    client: TestClient[web.Request, web.Application]
    core: Core
    model: GatedModel
    clock: ManualClock
    ran: list[str] = field(default_factory=list)
    """Targets the ``deploy`` tool ran for."""
    sessions: dict[str, str] = field(default_factory=dict)
    """Session cookies by person: each person is a browser of their own."""
    token: str | None = None

    async def cookie(self, who: str) -> dict[str, str]:
        """``who``'s session cookie, made by opening the page in a browser of their own (with
        the token, when one is set)."""
        if who not in self.sessions:
            url = self.client.make_url("/" if self.token is None else f"/?token={self.token}")
            async with (
                aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as browser,
                browser.get(url, allow_redirects=False) as page,
            ):
                assert page.status == (200 if self.token is None else 303)
                self.sessions[who] = page.cookies[COOKIE].value
        return {COOKIE: self.sessions[who]}

    async def user_id(self, who: str = "u1") -> str:
        """The id the playground gives ``who``'s session."""
        info = await self.client.get("/api/info", cookies=await self.cookie(who))
        assert info.status == 200
        return str((await info.json())["user_id"])

    async def say(
        self,
        text: str,
        *,
        thread_id: str | None = None,
        event_id: str = "event-0001",
        user_id: str = "u1",
        user_name: str = "Ada",
    ) -> dict[str, Any]:
        response = await self.client.post(
            "/api/messages",
            json={
                "thread_id": thread_id,
                "text": text,
                "event_id": event_id,
                "user_name": user_name,
            },
            cookies=await self.cookie(user_id),
        )
        assert response.status == 202, await response.text()
        body: dict[str, Any] = await response.json()
        return body

    async def click(
        self,
        thread_id: str,
        action_id: str,
        *,
        user_id: str = "u1",
        user_name: str = "Ada",
        client_id: str = "tab-a",
        message_id: str | None = None,
    ) -> ClientResponse:
        return await self.client.post(
            "/api/actions",
            json={
                "thread_id": thread_id,
                "action_id": action_id,
                "user_name": user_name,
                "client_id": client_id,
                "message_id": message_id,
            },
            cookies=await self.cookie(user_id),
        )

    async def thread(self, thread_id: str) -> dict[str, Any]:
        response = await self.client.get(f"/api/threads/{thread_id}")
        assert response.status == 200
        body: dict[str, Any] = await response.json()
        return body

    async def button(self, thread_id: str, label: str) -> str:
        """The action id of the button ``label`` shown in the thread."""
        messages = (await self.thread(thread_id))["messages"]
        found = [b["action_id"] for m in messages for b in m["buttons"] if b["label"] == label]
        assert len(found) == 1, f"{len(found)} {label!r} buttons in {json.dumps(messages)}"
        return str(found[0])

    async def session(self, thread_id: str) -> Session:
        """What the core stored for the thread."""
        return await self.core.store.load_session(thread_key(thread_id), self.clock.now())

    async def socket(
        self, client_id: str = "tab-a", user_id: str = "u1"
    ) -> ClientWebSocketResponse:
        return await self.client.ws_connect(
            f"/api/ws?client={client_id}", headers={"Cookie": f"{COOKIE}={self.sessions[user_id]}"}
        )

    async def idle(self) -> None:
        """Move the clock until no message or click is being handled any more."""
        await drive(self.clock, self.adapter.wait_idle(), limit=IDLE_LIMIT)


async def next_event(
    ws: ClientWebSocketResponse, match: Callable[[dict[str, Any]], bool] = lambda e: True
) -> dict[str, Any]:
    """The next event on ``ws`` that ``match``es (earlier ones are skipped)."""

    async def read() -> dict[str, Any]:
        while True:
            event: dict[str, Any] = await ws.receive_json()
            if match(event):
                return event

    return await asyncio.wait_for(read(), TIMEOUT)


@asynccontextmanager
async def open_playground(
    tmp_path: Path,
    *,
    stop_grace: float = 5.0,
    host: str = "127.0.0.1",
    token: str | None = None,
    **configured: Any,
) -> AsyncIterator[Playground]:
    """The adapter on the real core, on a test server; stopped and closed on the way out
    (``configured``: more settings)."""
    clock = ManualClock(start=1_000_000.0)
    model = GatedModel([], respond=echo)
    settings = Settings(data_dir=tmp_path / "data", **configured)
    ran: list[str] = []

    @tool(side_effects=True)
    async def deploy(ctx: ToolContext, target: str) -> str:
        """Deploy the service.

        Args:
            target: Where to.
        """
        ran.append(target)
        return f"deployed to {target}"

    tools = ToolRegistry([*builtin_tools(), deploy])
    core = Core(settings, SqliteStore(settings.database_path), model, tools, clock)
    await core.start()
    adapter = PlaygroundAdapter(
        core,
        tmp_path,
        host=host,
        token=token,
        stop_grace=stop_grace,
        action_wait=0.2,
        file_max_bytes=settings.file_max_bytes,
    )
    app = web.Application()
    adapter.install(app)
    try:
        await adapter.start()
        async with TestClient(TestServer(app)) as client:
            playground = Playground(adapter, client, core, model, clock, ran, token=token)
            # the test client is u1's browser: it opened the page, and keeps its cookie
            client.session.cookie_jar.update_cookies(await playground.cookie("u1"))
            yield playground
            await drive(clock, adapter.stop(), limit=IDLE_LIMIT)
    finally:
        await adapter.stop()
        await core.aclose()


@pytest.fixture
async def playground(tmp_path: Path) -> AsyncIterator[Playground]:
    async with open_playground(tmp_path) as playground:
        yield playground


PLATFORM_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "SLACK_BOT_TOKEN",
    "SLACK_APP_TOKEN",
    "SLACK_SIGNING_SECRET",
    "DISCORD_TOKEN",
    "THREADLINE_CONFIG",
)


@asynccontextmanager
async def browser(url: str) -> AsyncIterator[aiohttp.ClientSession]:
    """An HTTP client that keeps cookies, as a browser does, after opening the page at ``url``."""
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(f"{url}/") as page:
            assert page.status == 200, await page.text()
        yield http


@asynccontextmanager
async def demo_runtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, chunk_delay_s: float | None = None
) -> AsyncIterator[Runtime]:
    """The real runtime on the offline demo model, its HTTP server on a free port; the demo
    streams at its usual pace unless ``chunk_delay_s`` says otherwise."""
    for name in PLATFORM_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no .env or threadline.toml of the developer's
    settings = Settings(data_dir=tmp_path / "data", http_port=0, playground=True)
    model = build_openai_model(
        settings, SystemClock(), rng=random.Random(0), demo_chunk_delay_s=chunk_delay_s
    )
    runtime = Runtime(settings, platforms=Platforms(), model=model)
    await runtime.start()
    try:
        yield runtime
    finally:
        await runtime.stop()
