"""Many threads streaming at once in one Slack workspace, on the fake Slack enforcing Tier 3.

``--threads`` people mention the bot at the same moment, spread over ``--channels`` channels of
one workspace. Each answer is ``--tokens`` tokens (about four characters each) streamed at
``--rate`` tokens a second by a simple model. Everything runs through the real runtime, core,
presenter, Slack adapter, slack-bolt (Socket Mode) and slack_sdk, against the fake Slack, which
answers 429 beyond ``chat.update``'s 50 calls a minute for the workspace and
``chat.postMessage``'s ~1 a second per channel.

Slack's budget makes this slow in real time (50 streams share 50 edits a minute), so time runs
``--scale`` times faster everywhere: the fake's rate-limit windows, the adapter's edit budget and
minimum edit interval, and the model's token rate. Figures are printed in Slack seconds (real
seconds × scale), i.e. what a real workspace would see.

Prints: 429s and Retry-After violations per method (target: 0), edits per thread, time from
the mention to the first visible text (p50/p95, in real seconds: it is our processing and one
``chat.postMessage``, which the scale does not speed up), the lag from the model's last token to
the exact final text in the thread (p50/p95, in Slack seconds; a final posted anew counts from
when it appears), how long a superseded draft stayed beside it, and the threads left with two
full copies of their answer (target 0), and the threads where another message (a draft, a
"Working…" message) stayed beside the answer's final text for more than 2 s (target 0).

``--streaming native`` lets threads stream with ``chat.startStream`` where the stream budget
allows (``auto`` does that only when a stream can start at once, ``edit`` never).

    python -m bench.slack_stream [--threads 50] [--channels 10] [--tokens 200] [--rate 20]
        [--scale 10] [--streaming auto|native|edit]
    python -m bench.slack_stream --threads 20 --channels 5 --tokens 60 --rate 10
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.platforms import Platforms
from adapters.runtime import Runtime
from adapters.slack.config import SlackSettings
from bench.stats import percentile
from bot.config import Settings
from bot.llm.messages import Usage, UserMessage
from bot.llm.model import FinishPiece, ModelPiece, ModelRequest, TextPiece, UsagePiece
from tests.fakes.slack import MENTION, FakeSlack, Message

BESIDE_S = 2.0
"""Slack seconds a draft (or a "Working…" message) may stay beside its thread's answer."""
WORDS = [
    "slack",
    "edits",
    "budget",
    "thread",
    "stream",
    "reply",
    "tier",
    "three",
    "shared",
    "final",
]


@dataclass
class PacedModel:
    """Streams ``tokens`` words at ``rate`` a second; notes when each answer's last token left."""

    tokens: int
    rate: float
    name: str = "paced"
    label: str = "paced bench model"
    last_token: dict[str, float] = field(default_factory=dict)

    def answer(self, tag: str) -> list[str]:
        return [
            f"{tag}:" if i == 0 else f" {WORDS[(i * 7 + len(tag)) % len(WORDS)]}"
            for i in range(self.tokens)
        ]

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        tag = next(m.text for m in reversed(request.messages) if isinstance(m, UserMessage))
        start = time.monotonic()
        for i, token in enumerate(self.answer(tag)):
            await asyncio.sleep(max(0.0, start + i / self.rate - time.monotonic()))
            yield TextPiece(token)
        self.last_token[tag] = time.monotonic()
        yield UsagePiece(Usage(prompt_tokens=10, completion_tokens=self.tokens))
        yield FinishPiece("stop")

    async def aclose(self) -> None:
        return None


async def run(
    threads: int, channels: int, tokens: int, rate: float, scale: float, streaming: str
) -> None:
    fake = FakeSlack(time_scale=scale)
    for c in range(channels):
        fake.add_channel(f"CBENCH{c:02d}", f"bench-{c}")
    await fake.start()
    model = PacedModel(tokens, rate * scale)
    defaults = SlackSettings.model_fields
    with tempfile.TemporaryDirectory() as data:
        settings = Settings(
            data_dir=Path(data), http_port=0, playground=False, workspace_tools=False
        )
        slack = SlackSettings(
            **fake.settings(),
            slack_edits_per_minute=defaults["slack_edits_per_minute"].default * scale,
            slack_min_edit_interval=defaults["slack_min_edit_interval"].default / scale,
            slack_streaming=streaming,
            slack_stream_starts_per_minute=defaults["slack_stream_starts_per_minute"].default
            * scale,
            slack_stream_appends_per_minute=defaults["slack_stream_appends_per_minute"].default
            * scale,
            slack_stream_max_age=defaults["slack_stream_max_age"].default / scale,
        )
        runtime = Runtime(settings, platforms=Platforms(slack=slack), model=model)
        await runtime.start()
        try:
            roots = await mention_all(fake, threads, channels)
            await fake.wait_for(
                lambda: all(done(fake, model, r, tag) for tag, r in roots.items()), 3600
            )
            finals_at = time.monotonic()
            await fake.wait_for(
                lambda: all(len(fake.replies(r.channel, r.ts)) == 1 for r, _ in roots.values()),
                600 / scale,
            )
            cleaned = time.monotonic() - finals_at
        finally:
            await runtime.stop()
            await fake.stop()
    report(fake, model, roots, threads, channels, tokens, rate, scale, slack)
    print(f"every draft deleted {cleaned * scale:.1f} s after the last final text landed")


async def mention_all(
    fake: FakeSlack, threads: int, channels: int
) -> dict[str, tuple[Message, float]]:
    async def one(i: int) -> tuple[str, tuple[Message, float]]:
        tag = f"thread-{i:03d}"
        at = time.monotonic()
        return tag, (await fake.say("UADA", f"CBENCH{i % channels:02d}", f"{MENTION} {tag}"), at)

    return dict(await asyncio.gather(*(one(i) for i in range(threads))))


def final_text(model: PacedModel, tag: str) -> str:
    return "".join(model.answer(tag)).strip()


def bot_replies(fake: FakeSlack, root: Message) -> list[Message]:
    """Every reply the bot posted in the thread, deleted ones too, oldest first."""
    return sorted(
        (
            m
            for m in fake.workspace.messages.values()
            if m.channel == root.channel and m.thread_ts == root.ts and m.bot_id
        ),
        key=lambda m: m.ts,
    )


def final_shown_at(fake: FakeSlack, model: PacedModel, root: Message, tag: str) -> float | None:
    """When the exact final text first appeared in the thread (in any of the bot's replies)."""
    final = final_text(model, tag)
    times = [
        m.version_times[m.versions.index(final)]
        for m in bot_replies(fake, root)
        if final in m.versions
    ]
    return min(times) if times else None


def done(fake: FakeSlack, model: PacedModel, entry: tuple[Message, float], tag: str) -> bool:
    root = entry[0]
    final = final_text(model, tag)
    return any(m.shown == final and not m.deleted for m in bot_replies(fake, root))


def report(
    fake: FakeSlack,
    model: PacedModel,
    roots: dict[str, tuple[Message, float]],
    threads: int,
    channels: int,
    tokens: int,
    rate: float,
    scale: float,
    slack: SlackSettings,
) -> None:
    first_visible, lag, edits = [], [], []
    beside: list[float] = []
    """Per thread: Slack seconds its last other message (a draft, "Working…") stayed beside
    the answer's final text."""
    doubles = 0
    for tag, (root, mentioned) in roots.items():
        replies = bot_replies(fake, root)
        shown = [
            t
            for m in replies
            for v, t in zip(m.versions, m.version_times, strict=True)
            if v.strip() and "Working…" not in v
        ]
        first_visible.append(min(shown) - mentioned)
        landed = final_shown_at(fake, model, root, tag)
        assert landed is not None
        lag.append((landed - model.last_token[tag]) * scale)
        edits.append(sum(m.edits for m in replies))
        final = final_text(model, tag)
        doubles += sum(1 for m in replies if not m.deleted and m.shown == final) > 1
        kept = [m for m in replies if not m.deleted and m.shown == final]
        if kept:
            final_at = kept[0].version_times[kept[0].versions.index(final)]
            stays = [
                max(0.0, (m.deleted_at if m.deleted_at is not None else math.inf) - final_at)
                for m in replies
                if m is not kept[0]
            ]
            beside.append(max(stays, default=0.0) * scale)
    limits = fake.limits
    print(
        f"{threads} threads in {channels} channels of one workspace; answers of {tokens} tokens "
        f"at {rate:g} tokens/s ({tokens / rate:.0f} s each)"
    )
    print(
        f"time scaled x{scale:g}: fake windows / {scale:g}; adapter budget "
        f"{slack.slack_edits_per_minute / scale:g} edits/min and "
        f"{slack.slack_min_edit_interval * scale:g} s per message (x{scale:g}); figures in Slack seconds"
    )
    methods = sorted(set(limits.allowed) | set(limits.rejected))
    print(
        "calls (ok / 429 / violations): "
        + ", ".join(
            f"{m} {limits.allowed[m]}/{limits.rejected[m]}/{limits.violations[m]}" for m in methods
        )
    )
    print(
        f"429s on chat.update: {limits.rejected['chat.update']} (target 0); all 429s: "
        f"{sum(limits.rejected.values())}; Retry-After violations: {sum(limits.violations.values())}"
    )
    print(
        f"edits per thread: mean {statistics.mean(edits):.1f}, min {min(edits)}, max {max(edits)}"
    )
    p50, p95 = percentile(first_visible, 0.5), percentile(first_visible, 0.95)
    print(
        f"first visible text after the mention: p50 {p50:.2f} s, p95 {p95:.2f} s in real time "
        f"(processing and one chat.postMessage, which do not speed up; x{scale:g}: "
        f"{p50 * scale:.2f} / {p95 * scale:.2f} s)"
    )
    print(
        f"last token → exact final text: p50 {percentile(lag, 0.5):.1f} s, p95 {percentile(lag, 0.95):.1f} s"
    )
    print(f"threads left with two full copies of their answer: {doubles}")
    late = sum(s > BESIDE_S for s in beside)
    left = sum(s == math.inf for s in beside)
    print(
        f"threads with another message beside the answer for more than {BESIDE_S:g} s: {late} "
        f"of {len(beside)} (never deleted: {left}); longest "
        f"{max((s for s in beside if s != math.inf), default=0.0):.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--channels", type=int, default=10)
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--rate", type=float, default=20.0, help="tokens a second per answer")
    parser.add_argument("--scale", type=float, default=10.0, help="how much faster time runs")
    parser.add_argument("--streaming", choices=["auto", "native", "edit"], default="auto")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(
        run(args.threads, args.channels, args.tokens, args.rate, args.scale, args.streaming)
    )


if __name__ == "__main__":
    main()
