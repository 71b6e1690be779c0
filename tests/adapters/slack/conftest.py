"""A real runtime (core, SQLite store, Slack adapter, slack-bolt, slack_sdk) against the fake Slack.

``World`` starts the fake and a :class:`~adapters.runtime.Runtime` whose model is scripted;
``restart`` replaces the runtime (new core, new adapter) on the same data directory.
``HeldModel`` streams a scripted answer but stops after a chosen piece until the test lets it go,
so a test can see a reply before it is finished without sleeping.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from adapters.platforms import Platforms
from adapters.runtime import Runtime
from adapters.slack.adapter import SlackAdapter
from bot.config import Settings
from bot.llm.messages import UserMessage
from bot.llm.model import ModelPiece, ModelRequest, TextPiece
from tests.fakes.config import configure
from tests.fakes.scripted_model import ScriptedModel, Step, text
from tests.fakes.slack import FakeSlack, Message

PLATFORM_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "SLACK_BOT_TOKEN",
    "SLACK_APP_TOKEN",
    "SLACK_SIGNING_SECRET",
    "SLACK_API_URL",
    "DISCORD_TOKEN",
    "THREADLINE_CONFIG",
)
FAST = {
    "slack_min_edit_interval": 0.05,
    "slack_edits_per_minute": 6000.0,
    "slack_posts_per_minute": 6000.0,
}
"""Edit and post pacing for tests that are not about the budgets."""
EDITED = {"slack_streaming": "edit"}
"""Replies by edits unless a test asks for native streaming (``slack_streaming="auto"``)."""


def echo(request: ModelRequest) -> Step:
    """Answers with who said what last: ``Ada said: hello``."""
    last = next(m for m in reversed(request.messages) if isinstance(m, UserMessage))
    return text(f"{last.author_name} said: ", last.text)


@dataclass
class HeldModel:
    """A scripted model that pauses after the piece numbered ``hold_after`` until ``release``."""

    inner: ScriptedModel
    hold_after: int | None = None
    released: asyncio.Event = field(default_factory=asyncio.Event)
    name: str = "held"
    label: str = "held scripted model"

    @property
    def requests(self) -> list[ModelRequest]:
        return self.inner.requests

    def release(self) -> None:
        self.released.set()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        count = 0
        async for piece in self.inner.stream(request):
            yield piece
            if isinstance(piece, TextPiece):
                count += 1
                if count == self.hold_after:
                    await self.released.wait()

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass
class World:
    fake: FakeSlack
    tmp_path: Path
    model: Any
    settings: Settings
    platforms: Platforms
    runtime: Runtime | None = None

    @property
    def adapter(self) -> SlackAdapter:
        assert self.runtime is not None
        return next(a for a in self.runtime.adapters if isinstance(a, SlackAdapter))

    async def start(self) -> None:
        self.runtime = Runtime(self.settings, platforms=self.platforms, model=self.model)
        await self.runtime.start()
        if self.fake.deliverer.mode == "http":
            self.fake.http_target = f"{self.runtime.url}/slack/events"

    async def restart(self) -> None:
        await self.stop()
        await self.start()

    async def stop(self) -> None:
        if self.runtime is not None:
            await self.runtime.stop()
            self.runtime = None
        self.fake.http_target = None

    async def idle(self) -> None:
        await asyncio.wait_for(self.adapter.wait_idle(), 10)

    async def answered(self, root: Message, count: int = 1, within: float = 5.0) -> list[Message]:
        """Wait until the bot has answered ``count`` times in the thread; its messages."""
        await self.fake.wait_for(
            lambda: len(self.fake.replies(root.channel, root.ts)) >= count, within
        )
        await self.idle()
        return self.fake.replies(root.channel, root.ts)


@asynccontextmanager
async def slack_world(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    mode: Literal["socket", "http"] = "socket",
    model: Any = None,
    fake: FakeSlack | None = None,
    **settings: Any,
) -> AsyncIterator[World]:
    for name in PLATFORM_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    fake = fake or FakeSlack(mode=mode)
    await fake.start()
    values = {**FAST, **EDITED, **settings}
    config, platforms = configure(
        data_dir=tmp_path / "data", http_port=0, playground=False, **fake.settings(), **values
    )
    world = World(fake, tmp_path, model or ScriptedModel([], respond=echo), config, platforms)
    try:
        await world.start()
        yield world
    finally:
        await world.stop()
        await fake.stop()
