"""One MCP server for the life of the process (bot/mcp/server.py) and its toolkit in the tool
registry: restarts with backoff on a manual clock, the output cap, a changing tool list, names
and schemas fixed up, approvals from ``readOnlyHint``, and per-channel narrowing."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.api.inbound import ThreadKey
from bot.config import McpServerSettings, Settings
from bot.errors import McpUnavailable
from bot.infra.clock import ManualClock
from bot.mcp.server import McpServer, retry_delay
from bot.mcp.servers import McpServers
from bot.sessions.model import Session
from bot.tools.base import NAME_PATTERN, ToolContext, ToolError
from bot.tools.registry import ToolRegistry
from tests.bot.mcp.conftest import LogWatch, http, stdio
from tests.fakes.mcp_http import FakeMcpHttp
from tests.fakes.mcp_server import stdio_command


def server(*options: str, **settings: Any) -> McpServer:
    return McpServer(
        "tickets", McpServerSettings(command="python", **settings), stdio(*options), ManualClock()
    )


def starts(path: Path) -> int:
    return len(path.read_text().split()) if path.exists() else 0


@pytest.fixture
async def tickets(tmp_path: Path) -> AsyncIterator[McpServer]:
    found = server("--starts", str(tmp_path / "starts"))
    yield found
    await found.aclose()


def test_the_delay_doubles_after_the_second_failure_in_a_row() -> None:
    assert [retry_delay(n) for n in range(1, 7)] == [0, 1, 2, 4, 8, 16]
    assert retry_delay(50) == 300


async def test_a_server_that_died_is_started_again_on_the_next_call(
    tickets: McpServer, tmp_path: Path
) -> None:
    assert await tickets.start()
    with pytest.raises(
        McpUnavailable,
        match="tickets: the server exited with code 3; it is started again on the next call",
    ):
        await tickets.call("crash", {})
    assert await tickets.call("lookup", {"id": "T-2"}) == ("T-2: printer on fire (open)", False)
    assert starts(tmp_path / "starts") == 2


async def test_a_server_that_keeps_dying_is_retried_after_a_growing_delay(
    tickets: McpServer, tmp_path: Path
) -> None:
    clock = tickets._clock
    assert isinstance(clock, ManualClock)
    await tickets.start()
    for _ in range(2):
        with pytest.raises(McpUnavailable):
            await tickets.call("crash", {})
    with pytest.raises(McpUnavailable, match="exited with code 3; next try in 1 s"):
        await tickets.call("lookup", {"id": "T-3"})
    assert starts(tmp_path / "starts") == 2  # not started during the delay
    await clock.advance(1.0)
    assert (await tickets.call("lookup", {"id": "T-3"}))[0].startswith("T-3")
    with pytest.raises(McpUnavailable):  # the success reset the count: no delay after this one
        await tickets.call("crash", {})
    assert (await tickets.call("lookup", {"id": "T-4"}))[0].startswith("T-4")
    assert starts(tmp_path / "starts") == 4


async def test_a_broken_http_connection_is_opened_again_on_the_next_call() -> None:
    async with FakeMcpHttp() as fake:
        docs = McpServer("docs", McpServerSettings(url=fake.url), http(fake), ManualClock())
        try:
            assert await docs.start()
            with pytest.raises(
                McpUnavailable,
                match="docs: the connection closed; it is started again on the next call",
            ):
                await docs.call("crash", {})
            assert await docs.call("echo", {"text": "back"}) == ("back", False)
        finally:
            await docs.aclose()
    sessions = {h.get("mcp-session-id") for h in fake.headers} - {None}
    assert sessions == {"session-1", "session-2"}


async def test_output_is_capped() -> None:
    capped = server(max_output_chars=1000)
    try:
        text, failed = await capped.call("huge", {})
    finally:
        await capped.aclose()
    assert text == "y" * 1000 + "\n[output cut: 52,427,800 more characters]" and not failed


async def test_a_changed_tool_list_is_read_again(tickets: McpServer, log_watch: LogWatch) -> None:
    await tickets.start()
    before = tickets.generation
    await tickets.call("change_tools", {})
    await log_watch.wait_for("[tickets] its tool list changed: 13 tools")
    assert tickets.generation == before + 1
    assert "added" in {t.name for t in tickets.tools}


async def test_a_server_that_fails_at_start_is_logged_and_tried_again_at_the_next_model_call(
    tmp_path: Path, log_watch: LogWatch
) -> None:
    command = stdio_command("--fail-first", str(tmp_path / "failed-once"))
    settings = Settings(
        data_dir=tmp_path, mcp_servers={"tickets": {"command": command[0], "args": command[1:]}}
    )
    servers = McpServers(settings, ManualClock())
    registry = ToolRegistry()
    servers.install(registry)
    try:
        await servers.start()
        await log_watch.wait_for(
            "tickets: the server exited with code 2 before answering initialize"
        )
        assert registry.specs("playground:1") == ()  # each model call asks: that starts it again
        await log_watch.wait_for("[tickets] started: 12 tools")
    finally:
        await servers.aclose()
    assert "tickets__lookup" in {s.name for s in registry.specs("playground:1")}


async def test_tools_are_offered_with_approvals_from_read_only_hints(tmp_path: Path) -> None:
    registry, servers = await installed(tmp_path)
    try:
        lookup, close = registry.get("tickets__lookup"), registry.get("tickets__close_ticket")
        assert lookup is not None and close is not None
        assert (lookup.approval, lookup.side_effects) == ("never", False)
        assert (close.approval, close.side_effects) == ("ask", True)
        assert (
            await lookup.invoke(context(), lookup.parse('{"id": "T-5"}'))
            == "T-5: printer on fire (open)"
        )
        failing = registry.get("tickets__fail")
        assert failing is not None
        with pytest.raises(ToolError, match="read-only today"):
            await failing.invoke(context(), failing.parse("{}"))
    finally:
        await servers.aclose()


async def test_bad_names_and_schemas_are_fixed_up_or_not_offered(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bot.mcp.toolkit")
    registry, servers = await installed(tmp_path, "--catalog", "weird")
    try:
        specs = registry.specs("playground:1")
        names = {s.name for s in specs}
        renamed = registry.get("tickets__get_ticket_")
        assert renamed is not None
        answer = await renamed.invoke(context(), renamed.parse('{"id": "T-6"}'))
    finally:
        await servers.aclose()
    assert all(NAME_PATTERN.match(n) for n in names)
    assert {
        "tickets__get_ticket_",
        "tickets__look_up",
        "tickets__look_up_2",
        "tickets__search",
        "tickets__tree",
    } <= names
    assert "tickets__scalar" not in names
    assert "$ref" not in json.dumps([dict(s.parameters) for s in specs])
    assert all(s.parameters["type"] == "object" for s in specs)
    assert answer == "get ticket! done"  # called by its own name on the server
    assert (
        "[tickets] tool 'scalar' is not offered: its input schema is of type 'string', not an object"
        in caplog.text
    )
    assert "[tickets] tool 'get ticket!' is offered as tickets__get_ticket_" in caplog.text


async def test_a_channel_narrowed_to_other_servers_is_not_offered_them(tmp_path: Path) -> None:
    narrowed = {"slack:T1:C1": {"mcp_servers": ["docs"]}, "slack:T1:C2": {"mcp_servers": []}}
    registry, servers = await installed(tmp_path, channels=narrowed, docs=True)
    try:
        offered = {
            k: {s.name.split("__")[0] for s in registry.specs(k)}
            for k in ("slack:T1:C1:1.1", "slack:T1:C2:1.1", "slack:T1:C3:1.1")
        }
        stand_in = registry.get("tickets__lookup", "slack:T1:C1:1.1")
        assert stand_in is not None
        with pytest.raises(
            ToolError,
            match="tickets__lookup is not offered in this thread: its channel does not use the MCP server tickets",
        ):
            await stand_in.invoke(context(), stand_in.parse('{"id": "T-1"}'))
    finally:
        await servers.aclose()
    assert "tickets" not in offered["slack:T1:C1:1.1"] and "docs" in offered["slack:T1:C1:1.1"]
    assert not offered["slack:T1:C2:1.1"] & {"tickets", "docs"}
    assert {"tickets", "docs"} <= offered["slack:T1:C3:1.1"]


async def test_a_tool_the_server_does_not_have_says_so(tmp_path: Path) -> None:
    registry, servers = await installed(tmp_path)
    try:
        gone = registry.get("tickets__no_such_tool", "playground:1")
        assert gone is not None
        with pytest.raises(
            ToolError,
            match="has no tool tickets__no_such_tool now; its tools: tickets__change_tools",
        ):
            await gone.invoke(context(), gone.parse("{}"))
    finally:
        await servers.aclose()


async def test_a_tool_of_a_server_that_did_not_start_says_why(tmp_path: Path) -> None:
    registry, servers = await installed(tmp_path, "--exit-at-start", "2")
    try:
        missing = registry.get("tickets__lookup", "playground:1")
        assert missing is not None
        with pytest.raises(
            ToolError,
            match="tickets__lookup is not available now: tickets: the server exited with code 2",
        ):
            await missing.invoke(context(), missing.parse('{"id": "T-1"}'))
    finally:
        await servers.aclose()


async def installed(
    tmp_path: Path, *options: str, channels: dict[str, Any] | None = None, docs: bool = False
) -> tuple[ToolRegistry, McpServers]:
    command = stdio_command(*options)
    configured: dict[str, Any] = {"tickets": {"command": command[0], "args": command[1:]}}
    if docs:
        configured["docs"] = {"command": command[0], "args": command[1:]}
    settings = Settings(data_dir=tmp_path, mcp_servers=configured, channels=channels or {})
    servers = McpServers(settings, ManualClock())
    registry = ToolRegistry()
    servers.install(registry)
    await servers.start()
    return registry, servers


def context() -> ToolContext:
    key = ThreadKey("playground:1")
    return ToolContext(key, Session(key=key), None, ManualClock())
