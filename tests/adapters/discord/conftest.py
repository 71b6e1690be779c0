"""The real discord.py, the Discord adapter and the real core against the fake Discord.

Time runs ten times faster than the wall clock for the fake and the core alike (``FastClock``),
so Discord's windows (5 messages per 5 s per channel, the 3 s interaction deadline) hold as
written while the tests take a tenth of the time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from adapters.discord.adapter import DiscordAdapter
from adapters.discord.config import DiscordSettings
from bot.config import Settings
from bot.core import Core
from bot.llm.messages import Usage
from bot.llm.model import FinishPiece, ModelPiece, ModelRequest, TextPiece, UsagePiece
from bot.mcp.servers import McpServers
from tests.fakes.discord import Channel, FakeDiscord, FastClock, Guild, Message, User
from tests.fakes.scripted_model import ScriptedModel, Step, text

ENV = (
    "DISCORD_TOKEN",
    "DISCORD_API_BASE",
    "DISCORD_GATEWAY_URL",
    "SLACK_BOT_TOKEN",
    "SLACK_APP_TOKEN",
    "SLACK_SIGNING_SECRET",
    "SLACK_API_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
)
WITHIN = 5.0


def echo(request: ModelRequest) -> Step:
    """Answer every message with who said what."""
    last = request.messages[-1]
    return text(f"{getattr(last, 'author_name', None)} said: {getattr(last, 'text', '')}")


@dataclass
class GatedModel:
    """A scripted model that holds each answer until the test opens ``gate``."""

    inner: ScriptedModel
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    name: str = "gated"
    label: str = "gated model"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        await self.gate.wait()
        async for piece in self.inner.stream(request):
            yield piece

    async def aclose(self) -> None:
        return None


@dataclass
class PuppetModel:
    """A model whose text the test writes, piece by piece: ``say(...)``, then ``end()``."""

    queue: asyncio.Queue[str | None] = field(default_factory=asyncio.Queue)
    name: str = "puppet"
    label: str = "puppet model"

    def say(self, *pieces: str) -> None:
        for piece in pieces:
            self.queue.put_nowait(piece)

    def end(self) -> None:
        self.queue.put_nowait(None)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        while (piece := await self.queue.get()) is not None:
            yield TextPiece(piece)
        yield UsagePiece(Usage(prompt_tokens=1, completion_tokens=1))
        yield FinishPiece("stop")

    async def aclose(self) -> None:
        return None


@dataclass
class PacedModel:
    """A model that streams ``pieces`` one every ``gap`` seconds (of the shared clock)."""

    clock: FastClock
    pieces: list[str]
    gap: float
    name: str = "paced"
    label: str = "paced model"
    last_piece_at: float | None = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        for piece in self.pieces:
            yield TextPiece(piece)
            await self.clock.sleep(self.gap)
        self.last_piece_at = self.clock.monotonic()
        yield UsagePiece(Usage(prompt_tokens=1, completion_tokens=len(self.pieces)))
        yield FinishPiece("stop")

    async def aclose(self) -> None:
        return None


@dataclass
class Discord:
    """The fake Discord with a server, a channel and two people, and the bot under test."""

    fake: FakeDiscord
    clock: FastClock
    data_dir: Path
    guild: Guild
    channel: Channel
    ada: User
    bob: User
    model: Any
    settings: Settings
    discord: DiscordSettings
    core: Core | None = None
    mcp: McpServers | None = None
    adapter: DiscordAdapter | None = None
    adapters: list[DiscordAdapter] = field(default_factory=list)

    @property
    def bot(self) -> User:
        return self.fake.world.bot

    def mention(self, text: str = "") -> str:
        return f"<@{self.bot.id}> {text}".rstrip()

    async def start(self, *, model: Any = None, **settings: Any) -> DiscordAdapter:
        """A fresh core, its MCP servers and adapter on the data directory (a restart, when
        one ran before)."""
        await self.stop()
        if settings:
            self.settings = self.settings.model_copy(update=settings)
        self.core = Core.create(self.settings, clock=self.clock, model=model or self.model)
        self.mcp = McpServers(  # as the runtime
            self.settings,
            self.clock,
            asking=self.core.asking,
            waits=self.core.store,
            resume=self.core.signed_in,
            keep=self.core.store,
            expire=self.core.decisions.sign_in_expires,
            peers=self.core.peers,
            take_over=self.core.sign_in_take_over,
        )
        self.mcp.install(self.core.tools)
        await self.core.start()
        await self.mcp.start()
        self.adapter = DiscordAdapter(self.core, self.settings, self.discord)
        self.adapters.append(self.adapter)
        await self.adapter.start()
        # Identified: what the fake sends from now on reaches the client after GUILD_CREATE
        # (discord.py's on_ready comes 2 s later, once no more guilds arrive).
        sessions = len(self.fake.gateway.sessions)
        await self.wait_for(
            lambda: len(self.fake.gateway.sessions) > sessions and self.fake.gateway.live_sessions()
        )
        return self.adapter

    async def stop(self) -> None:
        if self.adapter is not None:
            await self.adapter.stop()
            self.adapter = None
        if self.mcp is not None:
            await self.mcp.aclose()
            self.mcp = None
        if self.core is not None:
            await self.core.aclose()
            self.core = None

    async def idle(self, within: float = WITHIN) -> None:
        """Wait until no message, click or command is handled, nor a run resumed by a click."""
        assert self.adapter is not None and self.core is not None
        await asyncio.wait_for(self.adapter.listeners.idle(), within)
        await asyncio.wait_for(self.core.wait_idle(), within)

    async def wait_for(self, predicate: Callable[[], object], within: float = WITHIN) -> None:
        await self.fake.wait_for(predicate, within)

    async def thread_of(self, message: Message) -> Channel:
        """The thread the bot opened from ``message``."""
        world = self.fake.world
        await self.wait_for(lambda: world.messages[message.id].thread_id is not None)
        thread_id = world.messages[message.id].thread_id
        assert thread_id is not None
        return world.channels[thread_id]

    async def shows(self, channel: Channel, expected: list[str], within: float = WITHIN) -> None:
        """Wait until the bot's messages in ``channel`` read exactly ``expected``."""
        try:
            await self.wait_for(lambda: self.fake.world.shown(channel.id) == expected, within)
        except TimeoutError:
            assert self.fake.world.shown(channel.id) == expected
        await self.idle()
        assert self.fake.world.shown(channel.id) == expected


@pytest.fixture
def clock() -> FastClock:
    return FastClock(10.0)


@pytest.fixture
async def fake(clock: FastClock) -> AsyncIterator[FakeDiscord]:
    fake = FakeDiscord(clock)
    await fake.start()
    try:
        yield fake
    finally:
        await fake.close()


def discord_values(fake: FakeDiscord) -> dict[str, Any]:
    """The Discord settings of an app that talks to ``fake``."""
    return {
        "discord_token": fake.token,
        "discord_api_base": fake.api_base,
        "discord_gateway_url": fake.gateway_url,
    }


def discord_settings(fake: FakeDiscord) -> DiscordSettings:
    return DiscordSettings(_env_file=None, **discord_values(fake))


def make_settings(data_dir: Path, **values: Any) -> Settings:
    return Settings(_env_file=None, data_dir=data_dir, http_port=0, playground=False, **values)


@pytest.fixture
async def discord_world(
    fake: FakeDiscord, clock: FastClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Discord]:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    world = fake.world
    guild = world.add_guild("Lab")
    world_ = Discord(
        fake=fake,
        clock=clock,
        data_dir=tmp_path / "data",
        guild=guild,
        channel=world.add_channel(guild, "general"),
        ada=world.add_user("Ada", guild=guild, nick="Ada L."),
        bob=world.add_user("Bob", guild=guild),
        model=ScriptedModel([], respond=echo),
        settings=make_settings(tmp_path / "data"),
        discord=discord_settings(fake),
    )
    try:
        yield world_
    finally:
        await world_.stop()


@pytest.fixture
async def running(discord_world: Discord) -> Discord:
    await discord_world.start()
    return discord_world
