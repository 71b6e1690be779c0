"""Tools called as tasks (MCP 2025-11-25): the real ``mcp`` client against the fake MCP server
(``--catalog tasks``), which declares task-augmented calls and advances a task one step at each
``tasks/get``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import mcp_types as types
import pytest

from bot.config import Settings
from bot.infra.clock import ManualClock
from bot.mcp.progress import task_line
from bot.mcp.report import TrialAsker
from bot.mcp.sdk.connection import Connection
from bot.mcp.sdk.tasks import poll_delay
from bot.mcp.servers import McpServers
from bot.tools.base import ToolError
from bot.tools.registry import ToolRegistry
from tests.bot.mcp.conftest import stdio
from tests.bot.mcp.test_progress import KEY, Events, Stepping, context, tool
from tests.fakes.mcp_http import FakeMcpHttp


@pytest.fixture
async def tasks_fake() -> AsyncIterator[FakeMcpHttp]:
    async with FakeMcpHttp("tasks") as fake:
        yield fake


@pytest.fixture
async def registry(tmp_path: Path, tasks_fake: FakeMcpHttp) -> AsyncIterator[ToolRegistry]:
    servers = McpServers(
        Settings(data_dir=tmp_path, mcp_servers={"jobs": {"url": tasks_fake.url}}), ManualClock()
    )
    found = ToolRegistry()
    servers.install(found)
    await servers.start()
    yield found
    await servers.aclose()


def test_the_poll_interval_is_the_servers_within_bounds() -> None:
    def task(ms: int | None) -> types.Task:
        return types.Task(
            task_id="t", status="working", created_at="", last_updated_at="", ttl=None,
            poll_interval=ms,
        )  # fmt: skip

    assert [poll_delay(task(ms)) for ms in (None, 5, 2500, 600_000)] == [1.0, 0.1, 2.5, 30.0]


def test_a_tasks_line_is_its_message_or_its_status() -> None:
    assert task_line("working", "reading  source 2\n") == "reading source 2"
    assert task_line("input_required", None) == "task input required"


async def test_a_task_only_tool_is_offered_polled_and_its_result_fetched(
    registry: ToolRegistry, tasks_fake: FakeMcpHttp
) -> None:
    research = tool(registry, "jobs__research")
    events = Events()
    result = await research.invoke(
        context(Stepping(), events), research.parse('{"topic": "tides"}')
    )
    assert result == "research on tides: 3 sources agree"
    assert events.lines() == [
        "research started",
        "reading source 1 of 3",
        "reading source 2 of 3",
        "reading source 3 of 3",
        "done",
    ]
    methods = tasks_fake.behaviour.methods
    assert methods[methods.index("tools/call") :] == [
        "tools/call",
        *["tasks/get"] * 4,
        "tasks/result",
    ]


async def test_an_optional_task_tool_is_called_plainly(
    registry: ToolRegistry, tasks_fake: FakeMcpHttp
) -> None:
    maybe = tool(registry, "jobs__maybe_task")
    assert await maybe.invoke(context(Stepping(), Events()), maybe.parse("{}")) == "maybe_task done"
    assert not tasks_fake.behaviour.tasks


async def test_a_failed_task_is_a_tool_error(registry: ToolRegistry) -> None:
    broken = tool(registry, "jobs__broken_job")
    with pytest.raises(ToolError, match="the index is gone"):
        await broken.invoke(context(Stepping(), Events()), broken.parse("{}"))


async def test_a_status_notification_ends_the_wait_for_the_next_poll(
    registry: ToolRegistry, tasks_fake: FakeMcpHttp
) -> None:
    announced = tool(registry, "jobs__announced")  # its poll interval: 10 minutes
    async with asyncio.timeout(10):
        result = await announced.invoke(context(Stepping(), Events()), announced.parse("{}"))
    assert result == "announced done"
    assert "tasks/get" not in tasks_fake.behaviour.methods


async def test_stopping_a_task_call_cancels_the_task(
    registry: ToolRegistry, tasks_fake: FakeMcpHttp
) -> None:
    stuck = tool(registry, "jobs__stuck")
    call = asyncio.create_task(stuck.invoke(context(Stepping(), Events()), stuck.parse("{}")))
    await tasks_fake.until(lambda: tasks_fake.behaviour.methods.count("tasks/get") >= 2)
    call.cancel()  # what Stop does to a running call
    with pytest.raises(asyncio.CancelledError):
        await call
    await tasks_fake.until(lambda: "tasks/cancel" in tasks_fake.behaviour.methods)
    assert [t.status for t in tasks_fake.behaviour.tasks.values()] == ["cancelled"]


async def test_a_task_that_needs_input_asks_through_the_calls_asker() -> None:
    said: list[str] = []
    connection = await Connection.open("jobs", stdio("--catalog", "tasks"), 10.0, lambda: None)
    try:
        await connection.list_tools()
        out = await connection.run(
            "confirm_job", {"topic": "tides"}, asker=TrialAsker(said.append), whose=str(KEY)
        )
    finally:
        await connection.aclose()
    assert out.text == 'confirm_job: accept {"go": true}' and not out.failed
    assert said[0] == "  the server asks: Run confirm_job on tides?"


async def test_without_the_servers_task_capability_a_task_only_tool_is_not_offered(
    tmp_path: Path,
) -> None:
    async with FakeMcpHttp("hints") as fake:
        connection = await Connection.open("jobs", stdio("--catalog", "hints"), 10.0, lambda: None)
        try:
            tools = {t.name: t for t in await connection.list_tools()}
        finally:
            await connection.aclose()
        assert "does not declare task-augmented tools/call" in tools["long_job"].unavailable
        assert not tools["maybe_task"].unavailable
        servers = McpServers(
            Settings(data_dir=tmp_path, mcp_servers={"hints": {"url": fake.url}}), ManualClock()
        )
        found = ToolRegistry()
        servers.install(found)
        await servers.start()
        try:
            offered = {spec.name for spec in found.specs(str(KEY))}
            assert "hints__maybe_task" in offered and "hints__long_job" not in offered
        finally:
            await servers.aclose()
