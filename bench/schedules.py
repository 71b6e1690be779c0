"""Scheduled prompts: the delay from a schedule's due time to its run starting, in one process.

200 prompts are scheduled through the real service in 200 threads, the real APScheduler timer
wakes the scheduler service, each run is claimed in the real SQLite store and goes through the
core to the model; the run's start is when the model receives its request. Two shapes:

- spread: due one every 20 ms over 4 seconds;
- burst: all 200 due at the same instant (what the last of them waits for the others).

    python bench/schedules.py [--jobs 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.stats import percentile
from bot.api.inbound import Author, ThreadKey
from bot.api.surface import SurfaceLimits
from bot.config import Settings
from bot.core import Core
from bot.infra.clock import SystemClock
from bot.llm.messages import Usage, UserMessage
from bot.llm.model import FinishPiece, ModelPiece, ModelRequest, TextPiece, UsagePiece
from bot.scheduler.timer import Timer
from bot.storage.sqlite.store import SqliteStore
from bot.tools import ToolRegistry
from bot.tools.builtin import builtin_tools
from tests.fakes.surface import RecordingSurface

FAST = SurfaceLimits(
    max_chars=4000, min_edit_interval=0.05, edits_per_minute=None, budget_key="bench"
)
ALICE = Author(id="bench:U1", display_name="Alice")


class Stopwatch:
    """A model that notes when each run's request arrives (by the prompt's text) and answers."""

    label = name = "stopwatch"

    def __init__(self, expected: int) -> None:
        self.started: dict[str, float] = {}
        self.expected = expected
        self.all_started = asyncio.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        asked = [m for m in request.messages if isinstance(m, UserMessage)][-1]
        self.started.setdefault(asked.text, time.time())
        if len(self.started) >= self.expected:
            self.all_started.set()
        yield TextPiece("done")
        yield UsagePiece(Usage(prompt_tokens=10, completion_tokens=1))
        yield FinishPiece("stop")

    async def aclose(self) -> None:
        return None


async def measure(jobs: int, spacing: float) -> list[float]:
    """Milliseconds from due time to the run's model request, one per job."""
    with tempfile.TemporaryDirectory() as tmp:
        clock = SystemClock()
        settings = Settings(_env_file=None, data_dir=Path(tmp), workspace_tools=False)
        model = Stopwatch(jobs)
        core = Core(
            settings,
            SqliteStore(settings.database_path),
            model,
            ToolRegistry(builtin_tools()),
            clock,
        )
        core.register_surfaces("bench:", lambda key: RecordingSurface(clock, FAST, thread_key=key))
        await core.start()
        timer = Timer(core.scheduler, clock)
        await timer.start()
        try:
            first = clock.now() + 1.5
            due: dict[str, float] = {}
            for i in range(jobs):
                at = first + i * spacing
                when = datetime.fromtimestamp(at, UTC).isoformat()
                added = await core.schedules.create(
                    ThreadKey(f"bench:t{i}"), ALICE, f"job {i}", when
                )
                due[added.prompt] = added.next_at
            await asyncio.wait_for(model.all_started.wait(), 60 + jobs * spacing)
            await core.wait_idle()
        finally:
            await timer.stop()
            await core.aclose()
    return [(model.started[p] - at) * 1000 for p, at in due.items()]


def report(name: str, delays: list[float]) -> None:
    print(
        f"{name:<8} {len(delays)} due jobs: due -> run start p50 {percentile(delays, 0.5):6.1f} ms, "
        f"p95 {percentile(delays, 0.95):6.1f} ms, max {max(delays):6.1f} ms, "
        f"mean {statistics.fmean(delays):6.1f} ms"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    args = parser.parse_args()
    report("spread", await measure(args.jobs, 0.02))
    report("burst", await measure(args.jobs, 0.0))


if __name__ == "__main__":
    asyncio.run(main())
