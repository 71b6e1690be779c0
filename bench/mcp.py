"""MCP servers as toolkits: what a tool call and a model call cost.

1. Call overhead over stdio: a trivial tool (``echo``) of the fake MCP server
   (tests/fakes/mcp_server.py, a separate process), called one after another:
   * through the toolkit, as the engine calls it (argument parsing, the SDK's session, our
     stdio bridge, the output cap);
   * bare: the same JSON-RPC line written to the same kind of process and its answer read back,
     with no SDK and no parsing, as this machine's floor.
2. Tools offered per model call, with 200 tools across 10 toolkits (10 fake servers, 20 tools
   each) in a thread of a channel narrowed to 9 of them:
   * steady state: ``ToolRegistry.specs(key)`` plus encoding the tools array for the request
     (:class:`bot.llm.wire.WireEncoder`), as each model call does;
   * after one server's tool list changed: the same, with that toolkit's tools and schemas
     rebuilt first.

    python bench/mcp.py [--calls 300] [--rounds 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

# this file is named like the SDK: its folder (first on the path) must not hide the `mcp` package
sys.path.pop(0)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.stats import percentile
from bot.api.inbound import ThreadKey
from bot.config import Settings
from bot.infra.clock import SystemClock
from bot.llm.wire import WireEncoder
from bot.mcp.servers import McpServers
from bot.sessions.model import Session
from bot.tools.base import ToolContext
from bot.tools.registry import ToolRegistry
from tests.fakes.mcp_server import stdio_command

KEY = "slack:T1:C1:1700000000.000100"


def _figures(label: str, samples_ms: list[float]) -> None:
    print(
        f"  {label}: p50 {percentile(samples_ms, 0.5):.3f} ms, p95 {percentile(samples_ms, 0.95):.3f} ms, "
        f"mean {statistics.fmean(samples_ms):.3f} ms ({len(samples_ms)} calls)"
    )


async def call_overhead(calls: int, data_dir: Path) -> None:
    command = stdio_command()
    settings = Settings(
        data_dir=data_dir, mcp_servers={"bench": {"command": command[0], "args": command[1:]}}
    )
    servers = McpServers(settings, SystemClock())
    registry = ToolRegistry()
    servers.install(registry)
    await servers.start()
    try:
        echo = registry.get("bench__echo", KEY)
        assert echo is not None
        ctx = ToolContext(ThreadKey(KEY), Session(key=ThreadKey(KEY)), None, SystemClock())
        for _ in range(20):  # warm up
            await echo.invoke(ctx, echo.parse('{"text": "hi"}'))
        samples = []
        for i in range(calls):
            started = time.perf_counter()
            await echo.invoke(ctx, echo.parse(json.dumps({"text": f"hi {i}"})))
            samples.append((time.perf_counter() - started) * 1000)
    finally:
        await servers.aclose()
    _figures("through the toolkit", samples)
    _figures("bare JSON-RPC line over a pipe", await bare_round_trips(calls))


async def bare_round_trips(calls: int) -> list[float]:
    command = stdio_command()
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    samples = []
    for i in range(calls + 20):
        line = {
            "jsonrpc": "2.0",
            "id": i,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hi"}},
        }
        started = time.perf_counter()
        proc.stdin.write((json.dumps(line) + "\n").encode())
        await proc.stdin.drain()
        await proc.stdout.readline()
        if i >= 20:
            samples.append((time.perf_counter() - started) * 1000)
    proc.stdin.close()
    await proc.wait()
    return samples


async def offer_cost(rounds: int, data_dir: Path) -> None:
    command = stdio_command("--catalog", "many:20")
    configured = {f"kit{i}": {"command": command[0], "args": command[1:]} for i in range(10)}
    narrowed = {"slack:T1:C1": {"mcp_servers": [f"kit{i}" for i in range(9)]}}
    settings = Settings(data_dir=data_dir, mcp_servers=configured, channels=narrowed)
    servers = McpServers(settings, SystemClock())
    registry = ToolRegistry()
    servers.install(registry)
    await servers.start()
    encoder = WireEncoder()
    try:
        everywhere = registry.specs("playground:1")
        here = registry.specs(KEY)
        print(
            f"  {len(everywhere)} tools offered in an unnarrowed thread, {len(here)} in the narrowed one"
        )
        encoder.tools_json(here)
        started = time.perf_counter()
        for _ in range(rounds):
            registry.specs(KEY)
        specs_only = (time.perf_counter() - started) / rounds * 1e6
        started = time.perf_counter()
        for _ in range(rounds):
            encoder.tools_json(registry.specs(KEY))
        steady = (time.perf_counter() - started) / rounds * 1e6
        print(
            f"  steady state: {steady:.1f} µs per model call ({specs_only:.1f} µs of it choosing the thread's tools)"
        )
        changed = servers.servers["kit0"]
        samples = []
        for _ in range(200):
            changed.generation += 1  # as after notifications/tools/list_changed
            started = time.perf_counter()
            encoder.tools_json(registry.specs(KEY))
            samples.append((time.perf_counter() - started) * 1e6)
        print(
            f"  after one toolkit's list changed: p50 {percentile(samples, 0.5):.0f} µs, "
            f"p95 {percentile(samples, 0.95):.0f} µs (its 20 tools and schemas rebuilt, then encoded)"
        )
    finally:
        await servers.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=20_000)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        print(f"1. MCP tool call over stdio (trivial tool, {args.calls} calls one after another)")
        await call_overhead(args.calls, Path(tmp))
        print("2. Tools offered per model call (200 tools across 10 toolkits)")
        await offer_cost(args.rounds, Path(tmp))


if __name__ == "__main__":
    asyncio.run(main())
