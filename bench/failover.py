"""How long a failing model costs before its fallback answers.

Two fake OpenAI servers on loopback (``tests/fakes/openai_server.py``, in this process): the
thread's model on the first, its fallback on the second (``[per_model]`` route with its own
key). Through ``build_openai_model`` and the real ``openai`` client, the time from asking to
the first word of the answer:

* healthy: the first server answers (the floor);
* fail-over without retries (``THREADLINE_MODEL_MAX_RETRIES=0``): the first server answers 503,
  the fallback answers;
* fail-over after retries (the default policy's jittered backoff, ``--retries`` of them): the
  first server answers 503 each time, then the fallback answers.

    python -m bench.failover [--calls 200] [--retried-calls 10] [--retries 2]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.stats import percentile
from bot.config import Settings
from bot.infra.clock import SystemClock
from bot.llm.messages import UserMessage
from bot.llm.model import ModelRequest, TextPiece
from bot.llm.openai_model import build_openai_model
from tests.fakes.openai_server import FakeOpenAI, Fault, Reply

REQUEST = ModelRequest("You are Threadline.", [UserMessage(text="When is high water?")], ())


async def first_word(settings: Settings, calls: int, first: FakeOpenAI, fail: bool) -> list[float]:
    """Seconds from asking to the first text piece, ``calls`` times."""
    model = build_openai_model(settings, SystemClock(), rng=random.Random(7))
    took: list[float] = []
    try:
        for _ in range(calls):
            first.default = (
                (lambda _: Fault.server_error(503)) if fail else (lambda _: Reply("At two."))
            )
            began = time.perf_counter()
            async for piece in model.stream(REQUEST):
                if isinstance(piece, TextPiece):
                    took.append(time.perf_counter() - began)
                    break
    finally:
        await model.aclose()
    return took


def line(name: str, took: list[float]) -> str:
    p50, p95 = percentile(took, 0.5) * 1000, percentile(took, 0.95) * 1000
    return f"{name:<34} p50 {p50:8.1f} ms   p95 {p95:8.1f} ms   ({len(took)} calls)"


async def main(calls: int, retried_calls: int, retries: int) -> None:
    os.environ["BENCH_LOCAL_KEY"] = "sk-bench-local"
    async with FakeOpenAI() as first, FakeOpenAI(default=lambda _: Reply("At two.")) as second:

        def settings(max_retries: int) -> Settings:
            return Settings(
                _env_file=None,
                openai_api_key="sk-bench",
                openai_base_url=first.base_url,
                model="gpt-4o",
                model_max_retries=max_retries,
                per_model={
                    "llama3.1": {"base_url": second.base_url, "api_key_env": "BENCH_LOCAL_KEY"}
                },
                fallback_models=["llama3.1"],
            )

        print(line("healthy (no fail-over)", await first_word(settings(0), calls, first, False)))
        print(line("fail-over, no retries", await first_word(settings(0), calls, first, True)))
        name = f"fail-over after {retries} retries"
        print(line(name, await first_word(settings(retries), retried_calls, first, True)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--retried-calls", type=int, default=10)
    parser.add_argument("--retries", type=int, default=2)
    args = parser.parse_args()
    os.environ.pop("THREADLINE_CONFIG", None)
    logging.disable(logging.WARNING)  # each fail-over and retry logs a warning
    asyncio.run(main(args.calls, args.retried_calls, args.retries))
