"""The engine's cost of reading tool calls written as text (``THREADLINE_TEXT_TOOL_CALLS``).

1. Round trip: the tool loop of ``bench/engine.py`` (a thread holding a 200-message history, a
   tool call in each answer, the fake model server in another process, the presenter and the
   SQLite store in the loop), with the setting off and on, the runs alternating so the machine's
   load falls on both alike; with it on, also a model that writes its calls as text
   (``<tool_call>…</tool_call>`` streamed in 4-character pieces). Two figures: the engine's
   overhead per round trip, from the last bytes of one response to the next request sent (as
   ``bench/engine.py`` reports it), and the whole turn, from one request sent to the next
   (the response's streaming, where the text is read, included).
2. The scanner alone: the time to pass 10,000 streamed pieces of prose (with ``<`` and ``[`` in
   it) through :func:`bot.llm.text_calls.with_text_calls`, against passing them as they are.

    python bench/text_calls.py [--turns 60] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.engine import (
    ALICE,
    FAST,
    WARM_UP,
    GapReplies,
    ServerProcess,
    TimedClient,
    _core,
    history,
    noop,
)
from bench.stats import percentile
from bot.api.inbound import Inbound, ThreadKey
from bot.config import Settings
from bot.infra.clock import SystemClock
from bot.llm.model import ModelPiece, TextPiece
from bot.llm.openai_model import OpenAIModel
from bot.llm.retry import Backoff
from bot.llm.text_calls import with_text_calls
from tests.fakes.openai_server import Reply
from tests.fakes.surface import RecordingSurface


class WrittenReplies(GapReplies):
    """As :class:`GapReplies`, the calls written into the text as Qwen does without a parser."""

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.n += 1
        if self.n >= self.turns:
            return Reply("Done.")
        call = f'<tool_call>\n{{"name": "noop", "arguments": {{"n": {self.n}}}}}\n</tool_call>'
        return Reply(f"Checking.\n{call}", text_chunk_chars=4)


async def overheads(
    respond: Callable[[dict[str, Any]], Reply], turns: int, on: bool
) -> list[float]:
    """The engine's overhead per round trip (ms), past the warm-up."""
    server = ServerProcess(respond)
    client = TimedClient()
    with tempfile.TemporaryDirectory() as tmp:
        async with server as base_url:
            settings = Settings(
                data_dir=Path(tmp),
                openai_base_url=base_url,
                max_turns=turns + 5,
                text_tool_calls=on,
            )
            model = OpenAIModel(
                settings.model,
                api_key="bench",
                base_url=base_url,
                clock=SystemClock(),
                backoff=Backoff(max_retries=0, rng=random.Random(0)),
                http_client=client,
            )
            core = _core(settings, model, [noop])
            await core.start()
            key = ThreadKey("bench:text-calls")
            session = await core.store.load_session(key, core.clock.now())
            await core.store.append_messages(session, history(200))
            surface = RecordingSurface(core.clock, FAST, thread_key=key)
            await core.handle(Inbound(key, ALICE, "go", "text-calls-1"), surface)
            await core.aclose()
    shown = surface.visible_text()
    assert "tool_call" not in shown, "a call's text reached the thread"
    sent = client.sent
    turns_ms = [(b - a) * 1000 for a, b in zip(sent, sent[1:], strict=False)]
    return client.overheads()[WARM_UP:], turns_ms[WARM_UP:]


def _line(name: str, values: list[float], base: float | None = None) -> str:
    p50 = statistics.median(values)
    versus = f"   {100 * (p50 - base) / base:+5.1f} % against off" if base else ""
    return f"  {name:<38} p50 {p50:5.2f} ms   p90 {percentile(values, 0.9):5.2f} ms{versus}"


CASES: dict[str, tuple[type[GapReplies], bool]] = {
    "off": (GapReplies, False),
    "on": (GapReplies, True),
    "on, calls written as text": (WrittenReplies, True),
}


async def round_trips(turns: int, rounds: int) -> None:
    gaps: dict[str, list[float]] = {name: [] for name in CASES}
    whole: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(rounds):
        for name, (replies, on) in CASES.items():
            overhead, turn = await overheads(replies(turns), turns, on)
            gaps[name] += overhead
            whole[name] += turn
    print(
        f"engine round trip, {rounds} x {turns - 1 - WARM_UP} tool turns per case, history 200+ "
        "messages, fake model server in another process, SQLite; overhead: last bytes in -> "
        "next send; whole turn: send -> next send; text tool calls:"
    )
    for title, runs in (("overhead", gaps), ("whole turn", whole)):
        base = statistics.median(runs["off"])
        for name, values in runs.items():
            label = f"{title}, {name}"
            print(_line(label, values, None if name == "off" else base))


PROSE = "The <b> tag and [links] read as text; a < b, x[0] and [TOOL] are words. " * 4


async def _pieces(count: int) -> AsyncIterator[ModelPiece]:
    for i in range(count):
        at = (i * 7) % (len(PROSE) - 6)
        yield TextPiece(PROSE[at : at + 6])


async def _drain(pieces: AsyncIterator[ModelPiece]) -> float:
    began = time.perf_counter()
    async for _ in pieces:
        pass
    return time.perf_counter() - began


async def scanner(count: int = 10_000, repeat: int = 7) -> None:
    plain = min([await _drain(_pieces(count)) for _ in range(repeat)])
    read = min([await _drain(with_text_calls(_pieces(count))) for _ in range(repeat)])
    per = (read - plain) / count * 1e6
    print(f"scanner alone, {count:,} pieces of 6 characters with '<' and '[' in them:")
    print(
        f"  as they are {plain * 1000:.1f} ms, read for calls {read * 1000:.1f} ms: {per:.2f} µs per piece"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    asyncio.run(round_trips(args.turns, args.rounds))
    asyncio.run(scanner())


if __name__ == "__main__":
    main()
