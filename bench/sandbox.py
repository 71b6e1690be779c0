"""What the sandbox costs a command: ``run_command "true"`` through the whole tool path (the
arguments parsed, the workspace found, the command run, its result described), in the bubblewrap
sandbox and unsandboxed (THREADLINE_SANDBOX=none), one after the other.

    python bench/sandbox.py [--runs 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.stats import percentile
from bot.api.inbound import ThreadKey
from bot.infra.clock import ManualClock
from bot.sessions.model import Session
from bot.tools.base import ToolContext
from bot.tools.builtin.workspace import workspace_tools
from bot.tools.bwrap import BwrapRunner, probe
from bot.tools.commands import CommandRunner, HostRunner


async def timings(runner: CommandRunner, root: Path, runs: int) -> list[float]:
    [command] = [t for t in workspace_tools(root, runner) if t.name == "run_command"]
    key = ThreadKey("playground:bench")
    ctx = ToolContext(key, Session(key=key), None, ManualClock())
    raw = json.dumps({"command": "true"})
    seconds: list[float] = []
    for _ in range(runs + 5):  # the first few warm the caches and are not counted
        start = time.perf_counter()
        out = await command.invoke(ctx, command.parse(raw))
        seconds.append(time.perf_counter() - start)
        assert out == "(no output)\n[exit code 0]", out
    return seconds[5:]


def line(name: str, seconds: list[float]) -> str:
    ms = [s * 1000 for s in seconds]
    return (
        f"{name:<28} p50 {percentile(ms, 0.5):6.1f} ms   p95 {percentile(ms, 0.95):6.1f} ms   "
        f"max {max(ms):6.1f} ms   ({len(ms)} runs)"
    )


async def main(runs: int) -> None:
    found = probe()
    print(f"bubblewrap: {found.detail}; {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        host = await timings(HostRunner(), root / "host", runs)
        print(line("run_command true, no sandbox", host))
        if not found.usable:
            print("the sandbox cannot run here: no sandboxed figure")
            return
        sandboxed = await timings(BwrapRunner(found.executable), root / "sandbox", runs)
        print(line("run_command true, sandbox", sandboxed))
        extra = percentile(sandboxed, 0.5) - percentile(host, 0.5)
        print(f"the sandbox adds {extra * 1000:.1f} ms at the median")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    asyncio.run(main(parser.parse_args().runs))
