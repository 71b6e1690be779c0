"""Fifty Discord threads streaming at once, through discord.py, against the fake Discord.

One guild, one text channel, 50 threads; 50 people mention the bot in their thread at the same
moment. The model thinks for ``--think`` seconds, then streams ``--tokens`` tokens (about four
characters each) at ``--rate`` tokens a second. The fake enforces Discord's limits: 5 message
creates/edits per 5 s per channel (a thread is a channel), 50 requests a second per bot.

Prints: 429s (target 0), edits per thread, time to first visible text (from the person's
message, and from the model's first token) p50/p95, and the lag from the model's last token to
the exact final text p50/p95. Times are in platform seconds (``--speed`` > 1 runs the clock
faster than the wall clock, for a quicker look).

    python -m bench.discord_stream [--threads 50] [--tokens 300] [--rate 25] [--think 0.5]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.discord.adapter import DiscordAdapter
from adapters.discord.config import DiscordSettings
from adapters.discord.render import render
from adapters.discord.surface import SPLIT_AT
from bench.stats import percentile
from bot.config import Settings
from bot.core import Core
from bot.llm.messages import Usage, UserMessage
from bot.llm.model import FinishPiece, ModelPiece, ModelRequest, TextPiece, UsagePiece
from bot.present.split import split_message
from tests.fakes.discord import FakeDiscord, FastClock

WORDS = ["the", "stream", "edits", "one", "message", "while", "text", "arrives", "within", "budget"]


def answer(tokens: int, seed: int) -> list[str]:
    """Tokens of about four characters, with a short code block in the middle."""
    out = [f"{WORDS[(i * 7 + seed) % len(WORDS)]} " for i in range(tokens)]
    middle = tokens // 2
    out[middle:middle] = ["\n\n```py\n", "print(", f"'{seed}'", ")\n", "```\n\n"]
    return out


@dataclass
class StreamingModel:
    clock: FastClock
    tokens: int
    rate: float
    think: float
    first_token: dict[int, float] = field(default_factory=dict)
    last_token: dict[int, float] = field(default_factory=dict)
    name: str = "bench"
    label: str = "bench model"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        last = request.messages[-1]
        assert isinstance(last, UserMessage)
        n = int(last.text.split()[-1])
        await self.clock.sleep(self.think)
        self.first_token[n] = self.clock.monotonic()
        for piece in answer(self.tokens, n):
            yield TextPiece(piece)
            await self.clock.sleep(1.0 / self.rate)
        self.last_token[n] = self.clock.monotonic()
        yield UsagePiece(Usage(prompt_tokens=10, completion_tokens=self.tokens))
        yield FinishPiece("stop")

    async def aclose(self) -> None:
        return None


class Recorder:
    """When each thread first showed bot text, and when it last changed."""

    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake
        self.first_text: dict[int, float] = {}
        self.last_change: dict[int, float] = {}
        fake.world.listeners.append(self._on_event)

    def _on_event(self, event: str, ref: dict[str, Any]) -> None:
        if event not in ("MESSAGE_CREATE", "MESSAGE_UPDATE", "MESSAGE_DELETE"):
            return
        world = self.fake.world
        mid = int(ref.get("message") or ref.get("id") or 0)
        message = world.messages.get(mid)
        if message is None or message.author.id != world.bot.id:
            return
        now = world.clock.monotonic()
        self.first_text.setdefault(message.channel_id, now)
        self.last_change[message.channel_id] = now


async def run(args: argparse.Namespace) -> None:
    clock = FastClock(args.speed)
    fake = FakeDiscord(clock)
    await fake.start()
    world = fake.world
    guild = world.add_guild("Bench")
    channel = world.add_channel(guild, "general")
    people = [world.add_user(f"Person{i}", guild=guild) for i in range(args.threads)]
    threads = [world.add_thread(channel, f"thread {i}", p) for i, p in enumerate(people)]
    recorder = Recorder(fake)
    model = StreamingModel(clock, args.tokens, args.rate, args.think)
    with tempfile.TemporaryDirectory() as data:
        settings = Settings(_env_file=None, data_dir=Path(data), playground=False)
        discord_settings = DiscordSettings(
            _env_file=None,
            discord_token=fake.token,
            discord_api_base=fake.api_base,
            discord_gateway_url=fake.gateway_url,
        )
        core = Core.create(settings, clock=clock, model=model)
        await core.start()
        adapter = DiscordAdapter(core, settings, discord_settings)
        await adapter.start()
        try:
            await fake.wait_for(lambda: fake.gateway.live_sessions(), 30)
            asked: dict[int, float] = {}
            for i, (person, thread) in enumerate(zip(people, threads, strict=True)):
                fake.say(thread, person, f"<@{world.bot.id}> go {i}")
                asked[thread.id] = clock.monotonic()
            expected = {
                t.id: split_message(render("".join(answer(args.tokens, i))), SPLIT_AT)
                for i, t in enumerate(threads)
            }
            await fake.wait_for(lambda: all(world.shown(t) == e for t, e in expected.items()), 600)
            await asyncio.wait_for(adapter.listeners.idle(), 60)
        finally:
            await adapter.stop()
            await core.aclose()
            await fake.close()
    report(fake, threads, asked, recorder, model)


def report(
    fake: FakeDiscord,
    threads: list[Any],
    asked: dict[int, float],
    recorder: Recorder,
    model: StreamingModel,
) -> None:
    edits: dict[int, int] = defaultdict(int)
    for call in fake.rest.calls:
        if call.method == "PATCH" and call.route.endswith("{mid}") and call.status == 200:
            edits[call.channel_id or 0] += 1
    per_thread = [edits[t.id] for t in threads]
    from_message = [recorder.first_text[t.id] - asked[t.id] for t in threads]
    from_token = [recorder.first_text[t.id] - model.first_token[i] for i, t in enumerate(threads)]
    lag = [recorder.last_change[t.id] - model.last_token[i] for i, t in enumerate(threads)]
    global_429 = sum(1 for r in fake.limits.refusals if r.is_global)
    print(
        f"threads: {len(threads)}, tokens each: {model.tokens} at {model.rate:g}/s "
        f"(think {model.think:g} s)"
    )
    print(f"429s: {fake.limits.count_429} ({global_429} global)")
    print(f"requests: {len(fake.rest.calls)}")
    print(
        f"edits per thread: mean {statistics.mean(per_thread):.1f}, "
        f"min {min(per_thread)}, max {max(per_thread)}"
    )
    for name, values in (
        ("first visible text after the message", from_message),
        ("first visible text after the first token", from_token),
        ("last token to exact final text", lag),
    ):
        print(f"{name}: p50 {percentile(values, 0.5):.2f} s, p95 {percentile(values, 0.95):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--tokens", type=int, default=300)
    parser.add_argument("--rate", type=float, default=25.0)
    parser.add_argument("--think", type=float, default=0.5)
    parser.add_argument("--speed", type=float, default=1.0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
