"""A playground adapter served on a test server, and helpers to read its WebSocket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from aiohttp import ClientWebSocketResponse, web
from aiohttp.test_utils import TestClient, TestServer

from adapters.playground import PlaygroundAdapter
from bot.config import Settings
from bot.conversation import Author, Inbound
from bot.present.surface import Button, Surface

if TYPE_CHECKING:
    from adapters.runtime import Runtime

TIMEOUT = 5.0


@dataclass
class StandInCore:
    """The two Core methods the adapter calls, answering in a way that shows what it was given.

    It stands in for the real core in the adapter's translation tests only: the reply names the
    thread key, the author, the display name and the event id the adapter passed on.
    """

    model_label: str = "stand-in model"
    seen: set[str] = field(default_factory=set)
    gate: asyncio.Event | None = None
    """When set, a run waits for it before answering."""
    surfaces: tuple[str, object] | None = None

    async def handle(self, inbound: Inbound, surface: Surface) -> None:
        if inbound.event_id in self.seen:
            return
        self.seen.add(inbound.event_id)
        if inbound.text == "explode":
            raise RuntimeError("the stand-in core failed on purpose")
        await surface.set_status("thinking…")
        if self.gate is not None:
            await self.gate.wait()
        await surface.post(
            f"key={inbound.thread_key} author={inbound.author.id} "
            f"name={inbound.author.display_name} event={inbound.event_id} text={inbound.text}",
            [Button("approve:1", "Approve", "primary"), Button("deny:1", "Deny", "danger")],
        )
        await surface.set_status(None)

    def register_surfaces(self, prefix: str, factory: object) -> None:
        self.surfaces = (prefix, factory)

    async def wait_idle(self) -> None:
        return None

    async def on_action(self, action_id: str, actor: Author, surface: Surface) -> str | None:
        if self.gate is not None:
            await self.gate.wait()
        return f"{actor.display_name} ({actor.id}) clicked {action_id} in {surface.thread_key}"


@dataclass
class Playground:
    adapter: PlaygroundAdapter
    client: TestClient[web.Request, web.Application]
    core: StandInCore

    async def say(self, text: str, *, thread_id: str | None = None, event_id: str = "event-0001",
                  user_id: str = "u1", user_name: str = "Ada") -> dict[str, Any]:
        response = await self.client.post(
            "/api/messages",
            json={"thread_id": thread_id, "text": text, "event_id": event_id,
                  "user_id": user_id, "user_name": user_name},
        )
        assert response.status == 202, await response.text()
        body: dict[str, Any] = await response.json()
        return body

    async def thread(self, thread_id: str) -> dict[str, Any]:
        response = await self.client.get(f"/api/threads/{thread_id}")
        assert response.status == 200
        body: dict[str, Any] = await response.json()
        return body

    async def socket(self, client_id: str = "tab-a") -> ClientWebSocketResponse:
        return await self.client.ws_connect(f"/api/ws?client={client_id}")


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


@pytest.fixture
async def playground(tmp_path: Path) -> AsyncIterator[Playground]:
    core = StandInCore()
    adapter = PlaygroundAdapter(core, tmp_path, action_wait=0.2)  # type: ignore[arg-type]
    app = web.Application()
    adapter.install(app)
    await adapter.start()
    async with TestClient(TestServer(app)) as client:
        yield Playground(adapter, client, core)
        await adapter.stop()


PLATFORM_ENV = (
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN",
    "SLACK_SIGNING_SECRET", "DISCORD_TOKEN", "THREADLINE_CONFIG",
)


@asynccontextmanager
async def demo_runtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, chunk_delay_s: float | None = None
) -> AsyncIterator[Runtime]:
    """The real runtime on the offline demo model, its HTTP server on a free port; the demo
    streams at its usual pace unless ``chunk_delay_s`` says otherwise."""
    import random

    from adapters.runtime import Runtime  # the real core, imported only by the tests that run it
    from bot.clock import SystemClock
    from bot.llm.openai_model import build_openai_model

    for name in PLATFORM_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no .env or threadline.toml of the developer's
    settings = Settings(data_dir=tmp_path / "data", http_port=0, playground=True)
    model = build_openai_model(
        settings, SystemClock(), rng=random.Random(0), demo_chunk_delay_s=chunk_delay_s
    )
    runtime = Runtime(settings, model=model)
    await runtime.start()
    try:
        yield runtime
    finally:
        await runtime.stop()
