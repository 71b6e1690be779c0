"""A follow-up right after an answer, on Slack and on Discord: how soon its answer shows text.

In ``--trials`` quiet threads, one after another, a person mentions the bot; the model streams
``--tokens`` tokens at ``--rate`` a second; the moment the model's last token has left (the
person has seen the answer come to its end), the person writes again in the thread. Measured: the time from that follow-up to the first
visible text of its answer (the model answers it at once), p50/p95. Runs in real time through
the real runtime and adapters, against the fake Slack (Slack's limits) and the fake Discord
(5 messages per 5 s per channel). For comparison, the same for a fresh mention.

    python -m bench.follow_up [--trials 20] [--tokens 30] [--rate 15]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.discord.adapter import DiscordAdapter
from adapters.discord.config import DiscordSettings
from adapters.discord.render import render as discord_render
from adapters.discord.surface import SPLIT_AT
from adapters.platforms import Platforms
from adapters.runtime import Runtime
from adapters.slack.config import SlackSettings
from bench.stats import percentile
from bot.config import Settings
from bot.core import Core
from bot.llm.messages import Usage
from bot.llm.model import FinishPiece, ModelPiece, ModelRequest, TextPiece, UsagePiece
from bot.present.split import split_message
from tests.fakes.discord import FakeDiscord, FastClock
from tests.fakes.slack import MENTION, FakeSlack, Message


@dataclass
class PacedModel:
    tokens: int
    rate: float
    name: str = "paced"
    label: str = "paced bench model"
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when an answer's last token has left."""

    def answer(self, turn: int) -> str:
        return "".join(f"word{i}.{turn} " for i in range(self.tokens)).strip()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        turn = sum(1 for m in request.messages if type(m).__name__ == "UserMessage")
        for i, word in enumerate(self.answer(turn).split(" ")):
            if i:
                await asyncio.sleep(1.0 / self.rate)
            yield TextPiece(word if i == 0 else " " + word)
        self.ended.set()
        yield UsagePiece(Usage(prompt_tokens=10, completion_tokens=self.tokens))
        yield FinishPiece("stop")

    async def aclose(self) -> None:
        return None


def first_text_after(times: list[tuple[float, str]], since: float) -> float:
    return min(t for t, shown in times if t >= since and shown.strip()) - since


def new_reply_text(fake: FakeSlack, root: Message, since: float) -> float:
    """When a reply posted after ``since`` first showed text."""
    new = [m for m in _slack_replies(fake, root) if m.version_times[0] >= since]
    return first_text_after(
        [(t, v) for m in new for v, t in zip(m.versions, m.version_times, strict=True)], since
    )


async def slack(trials: int, model: PacedModel) -> tuple[list[float], list[float]]:
    fake = FakeSlack()
    await fake.start()
    fresh, follow = [], []
    with tempfile.TemporaryDirectory() as data:
        settings = Settings(
            data_dir=Path(data), http_port=0, playground=False, workspace_tools=False
        )
        runtime = Runtime(
            settings, platforms=Platforms(slack=SlackSettings(**fake.settings())), model=model
        )
        await runtime.start()
        try:
            for _ in range(trials):
                asked = time.monotonic()
                model.ended.clear()
                root = await fake.say("UADA", "CGENERAL", f"{MENTION} hello")
                await asyncio.wait_for(model.ended.wait(), 60)
                fresh.append(first_text_after(_slack_versions(fake, root), asked))
                again = time.monotonic()
                await fake.say("UADA", "CGENERAL", "and then?", thread_ts=root.ts)
                await fake.wait_for(lambda r=root: _slack_shows(fake, r, model.answer(2)), 60)
                follow.append(new_reply_text(fake, root, again))
        finally:
            await runtime.stop()
            await fake.stop()
    return fresh, follow


def _slack_replies(fake: FakeSlack, root: Message) -> list[Message]:
    return [
        m
        for m in fake.workspace.messages.values()
        if m.channel == root.channel and m.thread_ts == root.ts and m.bot_id
    ]


def _slack_versions(fake: FakeSlack, root: Message) -> list[tuple[float, str]]:
    return [
        (t, v)
        for m in _slack_replies(fake, root)
        for v, t in zip(m.versions, m.version_times, strict=True)
    ]


def _slack_shows(fake: FakeSlack, root: Message, text: str) -> bool:
    return any(m.shown == text and not m.deleted for m in _slack_replies(fake, root))


async def discord(trials: int, model: PacedModel) -> tuple[list[float], list[float]]:
    clock = FastClock(1.0)
    fake = FakeDiscord(clock)
    await fake.start()
    world = fake.world
    guild = world.add_guild("Bench")
    channel = world.add_channel(guild, "general")
    person = world.add_user("Person", guild=guild)
    shown_at: list[tuple[float, int]] = []
    posted_at: list[tuple[float, int]] = []

    def on_event(event: str, ref: dict[str, Any]) -> None:
        message = world.messages.get(int(ref.get("message") or ref.get("id") or 0))
        if (
            event in ("MESSAGE_CREATE", "MESSAGE_UPDATE")
            and message is not None
            and message.author.id == world.bot.id
        ):
            shown_at.append((clock.monotonic(), message.channel_id))
            if event == "MESSAGE_CREATE":
                posted_at.append((clock.monotonic(), message.channel_id))

    world.listeners.append(on_event)
    fresh, follow = [], []
    with tempfile.TemporaryDirectory() as data:
        settings = Settings(_env_file=None, data_dir=Path(data), playground=False)
        values = DiscordSettings(
            _env_file=None,
            discord_token=fake.token,
            discord_api_base=fake.api_base,
            discord_gateway_url=fake.gateway_url,
        )
        core = Core.create(settings, clock=clock, model=model)
        await core.start()
        adapter = DiscordAdapter(core, settings, values)
        await adapter.start()
        try:
            await fake.wait_for(lambda: fake.gateway.live_sessions(), 30)
            for n in range(trials):
                thread = world.add_thread(channel, f"thread {n}", person)
                both = split_message(discord_render(model.answer(1)), SPLIT_AT) + split_message(
                    discord_render(model.answer(2)), SPLIT_AT
                )
                asked = clock.monotonic()
                model.ended.clear()
                fake.say(thread, person, f"<@{world.bot.id}> hello")
                await asyncio.wait_for(model.ended.wait(), 60)
                fresh.append(min(t for t, c in shown_at if c == thread.id and t >= asked) - asked)
                again = clock.monotonic()
                fake.say(thread, person, f"<@{world.bot.id}> and then?")
                await fake.wait_for(lambda t=thread.id, e=both: world.shown(t) == e, 60)
                follow.append(min(t for t, c in posted_at if c == thread.id and t >= again) - again)
        finally:
            await adapter.stop()
            await core.aclose()
            await fake.close()
    return fresh, follow


def line(name: str, values: list[float]) -> str:
    return f"{name}: p50 {percentile(values, 0.5):.2f} s, p95 {percentile(values, 0.95):.2f} s"


async def run(trials: int, tokens: int, rate: float) -> None:
    print(f"{trials} quiet threads each; answers of {tokens} tokens at {rate:g} tokens/s")
    for platform, measure in (("Slack", slack), ("Discord", discord)):
        fresh, follow = await measure(trials, PacedModel(tokens, rate))
        print(f"{platform}: " + line("first visible text after a fresh mention", fresh))
        print(
            f"{platform}: "
            + line("first visible text after a follow-up right after an answer", follow)
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--tokens", type=int, default=30)
    parser.add_argument("--rate", type=float, default=15.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(run(args.trials, args.tokens, args.rate))


if __name__ == "__main__":
    main()
