"""A sampling request with images, through the core: a server built with the ``mcp`` SDK
(tests/fakes/mcp_asking_server.py, over stdio) asks for a model's answer about a picture; the
thread's model is the real OpenAI client against the fake OpenAI server. The card names the
images, a model that sees images is given them as image parts, and what cannot be given (a
model without vision, audio, an image over the size cap) is an error for the server."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.api.inbound import Author, Inbound, ThreadKey
from bot.config import Settings
from bot.core import Core
from bot.infra.clock import ManualClock
from bot.llm.messages import ToolResult
from bot.llm.openai_model import build_openai_model
from bot.mcp.servers import McpServers
from bot.storage.sqlite.store import SqliteStore
from bot.tools.builtin import builtin_tools
from bot.tools.registry import ToolRegistry
from tests.fakes.mcp_asking_server import PNG, stdio_command
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply
from tests.fakes.surface import FakeMessage, RecordingSurface, drive, run_until

KEY = ThreadKey("slack:T1:C1:100.1")
ALICE = Author(id="slack:U1", display_name="Alice")
CARD = "asking__sampling"


class World:
    def __init__(self, tmp_path: Path, fake: FakeOpenAI, **settings: Any) -> None:
        command = stdio_command()
        self.clock = ManualClock(start=1_000_000.0)
        self.settings = Settings(
            data_dir=tmp_path,
            openai_base_url=fake.base_url,
            openai_api_key="sk-test",
            model="gpt-4o",
            mcp_servers={"asking": {"command": command[0], "args": command[1:], "timeout_s": 10}},
            tools={"asking__look": {"approval": "never"}},
            **settings,
        )
        self.surface = RecordingSurface(self.clock, thread_key=KEY)
        registry = ToolRegistry(builtin_tools())
        model = build_openai_model(self.settings, self.clock, rng=random.Random(1))
        self.core = Core(
            self.settings, SqliteStore(self.settings.database_path), model, registry, self.clock
        )
        self.mcp = McpServers(self.settings, self.clock, asking=self.core.asking)
        self.mcp.install(registry)
        self.core.register_surfaces(
            "slack:", lambda key: self.surface, lambda key: key.rsplit(":", 1)[0]
        )
        self.running: asyncio.Future[None] | None = None

    def start(self) -> None:
        inbound = Inbound(KEY, ALICE, "what is in it?", "ev-1")
        self.running = asyncio.ensure_future(self.core.handle(inbound, self.surface))

    async def card(self) -> FakeMessage:
        def shown() -> bool:
            return any(f"`{CARD}`" in m.text and m.buttons for m in self.surface.live())

        await run_until(self.clock, shown, step=0.5)
        return next(m for m in self.surface.live() if f"`{CARD}`" in m.text and m.buttons)

    async def finish(self) -> str:
        """The run to its end; the tool's result (what the server said it got)."""
        assert self.running is not None
        await drive(self.clock, self.running, step=0.5)
        await drive(self.clock, self.core.wait_idle(), step=0.5)
        session = await self.core.store.load_session(KEY, self.clock.now())
        [result] = [m.content for m in session.messages if isinstance(m, ToolResult)]
        return result


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def make_world(tmp_path: Path, fake: FakeOpenAI) -> AsyncIterator[Any]:
    made: list[World] = []

    async def make(**settings: Any) -> World:
        world = World(tmp_path, fake, **settings)
        await world.core.start()
        await world.mcp.start()
        made.append(world)
        return world

    yield make
    for world in made:
        if world.running is not None and not world.running.done():
            world.running.cancel()
            await asyncio.gather(world.running, return_exceptions=True)
        await world.mcp.aclose()
        await world.core.aclose()


def look(**arguments: Any) -> Reply:
    return Reply(calls=[FakeCall("asking__look", arguments)])


async def test_an_image_is_named_on_the_card_and_given_to_a_model_that_sees_images(
    make_world: Any, fake: FakeOpenAI
) -> None:
    world = await make_world(vision="on")
    fake.push(look(), Reply("A red dot."), Reply("It is a red dot."))
    world.start()
    card = await world.card()
    digest = hashlib.sha256(PNG).hexdigest()[:16]
    assert f'"images": "1 image (image/png, {len(PNG)} bytes, sha256 {digest})"' in card.text
    assert base64.b64encode(PNG).decode() not in card.text
    approve = next(b.action_id for b in card.buttons if b.label == "Approve")
    note = await drive(world.clock, world.core.on_action(approve, ALICE, world.surface, card.id))
    assert note == "Approved."
    assert await world.finish() == "seen (gpt-4o): A red dot."
    sampled = fake.requests[1].messages
    assert [m["role"] for m in sampled] == ["user"]
    assert sampled[0]["content"] == [
        {"type": "text", "text": "What is in this picture?"},
        {
            "type": "image_url",
            "image_url": {"url": f"data:image/png;base64,{base64.b64encode(PNG).decode()}"},
        },
    ]
    assert "tools" not in fake.requests[1].body
    assert world.surface.texts()[-1].endswith("It is a red dot.")


@pytest.mark.parametrize(
    ("settings", "arguments", "refusal"),
    [
        (
            {"vision": "off"},
            {},
            "the request has 1 image and the thread's model does not take images",
        ),
        ({"vision": "on"}, {"audio": True}, "audio cannot be sampled"),
        (
            {"vision": "on", "image_max_bytes": 1024},
            {"size": 2048},
            "an image of 2.0 KB is over the 1.0 KB this client gives a model",
        ),
        ({"vision": "on"}, {"mime": "image/jpeg"}, "an image said to be image/jpeg is image/png"),
    ],
    ids=["no vision", "audio", "too large", "not what it says"],
)
async def test_an_image_the_model_cannot_be_given_is_refused_before_anyone_is_asked(
    make_world: Any,
    fake: FakeOpenAI,
    settings: dict[str, Any],
    arguments: dict[str, Any],
    refusal: str,
) -> None:
    world = await make_world(**settings)
    fake.push(look(**arguments), Reply("It could not be seen."))
    world.start()
    result = await world.finish()
    assert result.startswith("sampling refused:") and refusal in result
    assert len(fake.requests) == 2  # the call, then the answer: nothing was sampled
    assert not any(f"`{CARD}`" in m.text for m in world.surface.messages.values())
