"""How long ``/healthz`` of a real ``threadline run`` takes to answer while a model greps a file
built to make a backtracking matcher run for ages: the model (a fake OpenAI server) writes
999,999 ``a`` and a ``!``, then, for each of ``--greps`` messages, calls grep with
``(a+)+$``, ``(a|aa)+$`` or ``(.*a){20}`` in turn; a poller asks ``/healthz`` back to back
the whole time. Prints the
p50/p99/max of ``/healthz`` while idle and while grepping, and how long the grep calls took.

Run: ``python -m bench.regex_healthz [--greps 30]``."""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from bot.llm.wire import from_data
from tests.e2e.test_process_restart import browser, free_port, open_page, threadline
from tests.e2e.test_tools_process import Thread
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply, Response

EVIL = "a" * 999_999 + "!"
PATTERNS = ("(a+)+$", "(a|aa)+$", "(.*a){20}")


class Model:
    """A first message writes the file; each later one (``grep N``) is one grep call with the
    Nth pattern. It records when each grep call began (its answer) and ended (the next
    request), and sets :attr:`answered` after each result."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, float]] = []
        self._asked = 0.0
        self.answered = asyncio.Event()

    def __call__(self, body: dict[str, Any]) -> Response:
        last = body["messages"][-1]
        if last["role"] == "user":
            asked = re.findall(r"grep (\d+)", str(last["content"]))
            if not asked:
                return Reply(calls=[FakeCall("write_file", {"path": "evil.txt", "content": EVIL})])
            self._asked = time.monotonic()
            pattern = PATTERNS[int(asked[-1]) % len(PATTERNS)]
            return Reply(calls=[FakeCall("grep", {"pattern": pattern, "path": "evil.txt"})])
        if from_data(str(last["content"])).startswith(("No matches", "evil.txt:")):
            self.calls.append((self._asked, time.monotonic()))
        self.answered.set()
        return Reply("done")


async def poll(
    http: aiohttp.ClientSession, url: str, until: asyncio.Event
) -> list[tuple[float, float]]:
    """(start, seconds) of each ``/healthz`` asked back to back until ``until`` is set."""
    samples = []
    while not until.is_set():
        start = time.monotonic()
        async with http.get(url) as resp:
            assert resp.status == 200
        samples.append((start, time.monotonic() - start))
    return samples


def figures(label: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return (
        f"{label:28} n={len(ms):5}  p50 {statistics.median(ms):7.2f} ms  "
        f"p99 {p99:7.2f} ms  max {ms[-1]:7.2f} ms"
    )


async def main(greps: int) -> None:
    model = Model()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeOpenAI(default=model) as fake, browser() as http:
            env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
            async with threadline(Path(tmp), port, **env):
                await open_page(http, base)
                idle_done = asyncio.Event()
                idle = asyncio.create_task(poll(http, f"{base}/healthz", idle_done))
                await asyncio.sleep(2)  # a benchmark: two seconds of idle samples
                idle_done.set()
                quiet = await idle
                async with http.ws_connect(f"{base}/api/ws?client=bench") as ws:
                    thread = Thread(http, base, ws)
                    await thread.say("Write the file")
                    async with asyncio.timeout(60):
                        await model.answered.wait()
                    done = asyncio.Event()
                    busy = asyncio.create_task(poll(http, f"{base}/healthz", done))
                    for n in range(greps):
                        model.answered.clear()
                        await thread.say(f"grep {n}")
                        async with asyncio.timeout(60):
                            await model.answered.wait()
                    done.set()
                    samples = await busy
    during = [
        took
        for start, took in samples
        if any(begin <= start + took and start <= end for begin, end in model.calls)
    ]
    grep_ms = [(end - begin) * 1000 for begin, end in model.calls]
    print(f"grep of {len(EVIL):,} characters with {', '.join(PATTERNS)}, {greps} calls")
    print(figures("/healthz idle", [t for _, t in quiet]))
    print(figures("/healthz during grep calls", during))
    print(
        f"{'grep call (model to model)':28} n={len(grep_ms):5}  "
        f"p50 {statistics.median(grep_ms):7.2f} ms  max {max(grep_ms):7.2f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--greps", type=int, default=30)
    asyncio.run(main(parser.parse_args().greps))
