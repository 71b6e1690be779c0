"""An MCP call's progress as its live status line, and Stop as ``notifications/cancelled``: the
real ``mcp`` client against the fake MCP server (``--catalog slow``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.api.inbound import ThreadKey
from bot.config import Settings
from bot.engine.events import EngineEvent, ToolProgress
from bot.infra.clock import Clock, ManualClock
from bot.mcp.progress import progress_line
from bot.mcp.servers import McpServers
from bot.sessions.model import Session
from bot.tools.base import Tool, ToolContext
from bot.tools.registry import ToolRegistry
from tests.fakes.mcp_http import FakeMcpHttp
from tests.fakes.mcp_server import stdio_command

KEY = ThreadKey("playground:1")


class Stepping(ManualClock):
    """A clock that moves two seconds each time it is read (every progress is due)."""

    def monotonic(self) -> float:
        self.moved = getattr(self, "moved", 0.0) + 2.0
        return self.moved


class Events:
    def __init__(self) -> None:
        self.seen: list[EngineEvent] = []

    async def __call__(self, event: EngineEvent) -> None:
        self.seen.append(event)

    def lines(self) -> list[str]:
        return [e.text for e in self.seen if isinstance(e, ToolProgress)]


@pytest.fixture
async def stdio_servers(tmp_path: Path) -> AsyncIterator[tuple[ToolRegistry, McpServers]]:
    command = stdio_command("--catalog", "slow")
    servers = McpServers(
        Settings(
            data_dir=tmp_path,
            mcp_servers={"tickets": {"command": command[0], "args": command[1:]}},
        ),
        ManualClock(),
    )
    registry = ToolRegistry()
    servers.install(registry)
    await servers.start()
    yield registry, servers
    await servers.aclose()


def tool(registry: ToolRegistry, name: str) -> Tool:
    found = registry.get(name, str(KEY))
    assert found is not None
    return found


def context(clock: Clock, events: Events) -> ToolContext:
    return ToolContext(KEY, Session(key=KEY), None, clock, call_id="call-1", events=events)


def test_a_progress_line_says_how_far_and_what() -> None:
    assert progress_line(3, 10, "reading  files\n") == "3 of 10: reading files"
    assert progress_line(0.5, None, None) == "0.5"
    assert (
        progress_line(1, 2, "x" * 500).endswith("x…") and len(progress_line(1, 2, "x" * 500)) == 208
    )


async def test_progress_notifications_become_the_calls_status_line(
    stdio_servers: tuple[ToolRegistry, McpServers],
) -> None:
    registry, _ = stdio_servers
    reindex = tool(registry, "tickets__reindex")
    events = Events()
    result = await reindex.invoke(context(Stepping(), events), reindex.parse('{"steps": 3}'))
    assert result == "reindexed in 3 steps"  # the server was given a progress token
    assert events.lines() == ["1 of 3: step 1", "2 of 3: step 2", "3 of 3: step 3"]
    assert {(e.call_id, e.name) for e in events.seen if isinstance(e, ToolProgress)} == {
        ("call-1", "tickets__reindex")
    }


async def test_progress_reaches_the_thread_at_most_once_a_second(
    stdio_servers: tuple[ToolRegistry, McpServers],
) -> None:
    registry, _ = stdio_servers
    reindex = tool(registry, "tickets__reindex")
    events = Events()
    await reindex.invoke(context(ManualClock(), events), reindex.parse('{"steps": 20}'))
    assert events.lines() == ["1 of 20: step 1"]  # the clock did not move


async def test_stopping_a_call_tells_the_server_it_is_cancelled(tmp_path: Path) -> None:
    async with FakeMcpHttp("slow") as fake:
        servers = McpServers(
            Settings(data_dir=tmp_path, mcp_servers={"tickets": {"url": fake.url}}), ManualClock()
        )
        registry = ToolRegistry()
        servers.install(registry)
        await servers.start()
        try:
            hang = tool(registry, "tickets__hang")
            call = asyncio.create_task(
                hang.invoke(context(ManualClock(), Events()), hang.parse("{}"))
            )
            await fake.until(lambda: ("hang", {}) in fake.behaviour.calls)
            call.cancel()  # what Stop does to a running call
            with pytest.raises(asyncio.CancelledError):
                await call
            await fake.until(
                lambda: any(n["method"] == "notifications/cancelled" for n in fake.behaviour.notes)
            )
        finally:
            await servers.aclose()


class Stuck(Events):
    """A thread that never finishes showing a progress line."""

    def __init__(self) -> None:
        super().__init__()
        self.held = asyncio.Event()

    async def __call__(self, event: EngineEvent) -> None:
        self.seen.append(event)
        if isinstance(event, ToolProgress):
            await self.held.wait()


async def test_a_flood_of_notifications_delays_neither_the_answer_nor_other_threads(
    stdio_servers: tuple[ToolRegistry, McpServers],
) -> None:
    """5,000 progress and 5,000 log notifications for one call, each due (the clock moves 2 s
    at each look), whose thread is stuck showing its line: the call's answer is exact, another
    thread's call on the same server answers, and the stuck thread was handed one line, the
    others coalesced away (not one waiting delivery per notification)."""
    registry, _ = stdio_servers
    flood, reindex = tool(registry, "tickets__flood"), tool(registry, "tickets__reindex")
    stuck, other = Stuck(), Events()
    async with asyncio.timeout(60):  # a bound on a failure, not a wait
        flooded, reindexed = await asyncio.gather(
            flood.invoke(context(Stepping(), stuck), flood.parse('{"count": 5000}')),
            reindex.invoke(context(Stepping(), other), reindex.parse('{"steps": 3}')),
        )
    assert flooded == "flooded: 5000 rows, sum 12502500"
    assert reindexed == "reindexed in 3 steps"
    assert other.lines() == ["1 of 3: step 1", "2 of 3: step 2", "3 of 3: step 3"]
    assert stuck.lines() == ["1 of 5000: row 1"]
