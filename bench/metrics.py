"""What counting costs: the hooks on the hot paths, and a scrape.

1. A model stream through :func:`bot.infra.metrics.metered` against the same stream iterated bare:
   the extra time per streamed piece (a reply of 200 pieces, many times).
2. One platform request counted (:func:`bot.infra.metrics.platform_request`: a counter and a
   histogram), one run counted, one edit granted by the budget's meter.
3. ``/metrics``' body (:func:`bot.infra.metrics.exposition`) once the registry holds what a busy worker
   shows: 40 tools, 60 platform methods, every outcome of runs and model calls.

    python bench/metrics.py [--rounds 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.stats import percentile
from bot.infra import metrics
from bot.llm.messages import Usage
from bot.llm.model import ModelPiece, TextPiece, UsagePiece
from bot.present import budget

PIECES = 200


async def _stream() -> AsyncIterator[ModelPiece]:
    for n in range(PIECES):
        yield TextPiece(f"word{n} ")
    yield UsagePiece(Usage(prompt_tokens=1000, completion_tokens=PIECES))


async def _drain(stream: AsyncIterator[ModelPiece]) -> None:
    async for _ in stream:
        pass


async def per_piece(rounds: int) -> tuple[float, float]:
    """Median seconds per piece: bare, and metered."""
    bare, metered = [], []
    for _ in range(rounds):
        began = time.perf_counter()
        await _drain(_stream())
        bare.append((time.perf_counter() - began) / PIECES)
        began = time.perf_counter()
        await _drain(metrics.metered(_stream()))
        metered.append((time.perf_counter() - began) / PIECES)
    return percentile(bare, 0.5), percentile(metered, 0.5)


def per_call(rounds: int) -> dict[str, float]:
    found: dict[str, float] = {}
    began = time.perf_counter()
    for n in range(rounds):
        metrics.platform_request("slack", "chat.update", 200 if n % 50 else 429, 0.01)
    found["platform request"] = (time.perf_counter() - began) / rounds
    began = time.perf_counter()
    for _ in range(rounds):
        with metrics.counted_run() as run:
            run.outcome = "completed"
    found["run"] = (time.perf_counter() - began) / rounds
    meter = budget.EditMeter("bench", 50)
    began = time.perf_counter()
    for _ in range(rounds):
        with meter.waiting():
            meter.granted("interim", 0.2)
    found["edit"] = (time.perf_counter() - began) / rounds
    return found


def busy_registry() -> None:
    for tool in range(40):
        metrics.tool_ran(f"tool_{tool}", is_error=tool % 7 == 0, began=time.perf_counter())
    for method in range(60):
        for status in (200, 429, 500, None):
            metrics.platform_request("discord", f"PATCH /route/{method}", status, 0.05)
    for outcome in ("completed", "paused", "stopped", "failed"):
        metrics.RUNS_FINISHED.labels(outcome).inc()
        metrics.MODEL_CALLS.labels(outcome).inc()


def scrape(rounds: int) -> tuple[float, float, int]:
    times = []
    body = b""
    for _ in range(rounds):
        began = time.perf_counter()
        body, _ = metrics.exposition()
        times.append(time.perf_counter() - began)
    return percentile(times, 0.5), percentile(times, 0.9), len(body)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    bare, metered = asyncio.run(per_piece(max(1, args.rounds // 10)))
    print(
        f"model stream: {bare * 1e6:.2f} µs a piece bare, {metered * 1e6:.2f} µs metered "
        f"(+{(metered - bare) * 1e6:.2f} µs a piece, +{(metered - bare) * PIECES * 1e3:.3f} ms "
        f"for a {PIECES}-piece reply)"
    )
    for name, seconds in per_call(args.rounds * 10).items():
        print(f"one {name} counted: {seconds * 1e6:.2f} µs")
    busy_registry()
    p50, p90, size = scrape(max(1, args.rounds // 20))
    print(
        f"/metrics body of a busy worker ({size / 1024:.0f} KiB): p50 {p50 * 1e3:.2f} ms, p90 {p90 * 1e3:.2f} ms"
    )


if __name__ == "__main__":
    main()
