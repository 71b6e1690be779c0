"""The real ``mcp`` client (bot/mcp/sdk/) against the fake MCP server, over stdio and
streamable HTTP: answers, failures, hangs, crashes, huge and malformed answers, a changing tool
list, and servers that do not start."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path

import pytest

from bot.errors import McpError, McpTimeout, McpUnavailable
from bot.mcp.asking import Output
from bot.mcp.endpoint import Endpoint, HttpEndpoint, StdioEndpoint
from bot.mcp.sdk.connection import Connection, render
from tests.bot.mcp.conftest import LogWatch, http, stdio
from tests.fakes.mcp_http import FakeMcpHttp
from tests.fakes.mcp_server import HUGE_CHARS

TRANSPORTS = ["stdio", "http"]


def said(out: Output) -> tuple[str, bool]:
    """What a call's output gives the model: its text, and whether it failed."""
    return out.text, out.failed


async def open_connection(
    transport: str,
    fake: FakeMcpHttp,
    *,
    timeout_s: float = 10.0,
    changed: asyncio.Event | None = None,
) -> Connection:
    endpoint: Endpoint = stdio() if transport == "stdio" else http(fake)
    signal = changed or asyncio.Event()
    return await Connection.open("tickets", endpoint, timeout_s, signal.set)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_tools_are_listed_with_their_read_only_hint(
    transport: str, http_fake: FakeMcpHttp
) -> None:
    connection = await open_connection(transport, http_fake)
    try:
        tools = {t.name: t for t in await connection.list_tools()}
    finally:
        await connection.aclose()
    assert tools["lookup"].read_only and not tools["close_ticket"].read_only
    assert tools["lookup"].description == "Look a ticket up by id."
    assert tools["lookup"].schema["required"] == ["id"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_answers_failures_and_errors(transport: str, http_fake: FakeMcpHttp) -> None:
    connection = await open_connection(transport, http_fake)
    try:
        assert said(await connection.run("lookup", {"id": "T-1"})) == (
            "T-1: printer on fire (open)",
            False,
        )
        assert said(await connection.run("fail", {})) == (
            "the ticket store is read-only today",
            True,
        )
        with pytest.raises(McpError, match="database exploded"):
            await connection.run("rpc_error", {})
        assert connection.alive
    finally:
        await connection.aclose()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_call_that_hangs_times_out_and_the_connection_goes_on(
    transport: str, http_fake: FakeMcpHttp
) -> None:
    connection = await open_connection(transport, http_fake, timeout_s=0.3)
    try:
        with pytest.raises(McpTimeout, match="no answer to hang within 0.3 s"):
            await connection.run("hang", {})
        assert said(await connection.run("echo", {"text": "still here"})) == ("still here", False)
    finally:
        await connection.aclose()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_result_of_50_mb_arrives(transport: str, http_fake: FakeMcpHttp) -> None:
    connection = await open_connection(transport, http_fake, timeout_s=30)
    try:
        out = await connection.run("huge", {})
        assert len(out.text) == HUGE_CHARS and not out.failed
        assert said(await connection.run("echo", {"text": "after"})) == ("after", False)
    finally:
        await connection.aclose()


async def test_a_message_over_the_limit_ends_the_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    base = stdio()
    endpoint = StdioEndpoint(base.command, base.args, base.env, None, max_message_bytes=1024 * 1024)
    connection = await Connection.open("tickets", endpoint, 10, lambda: None)
    try:
        with pytest.raises(McpUnavailable, match="longer than 1 MiB"):
            await connection.run("huge", {})
        assert not connection.alive
    finally:
        await connection.aclose()
    assert "[tickets] sent a message longer than 1 MiB: closing the connection" in caplog.text


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_malformed_json_rpc_is_logged_and_is_an_error(
    transport: str, http_fake: FakeMcpHttp, caplog: pytest.LogCaptureFixture
) -> None:
    connection = await open_connection(transport, http_fake)
    try:
        with pytest.raises(
            McpError,
            match=r"malformed answer to malformed \(content: Input should be a valid list\)",
        ):
            await connection.run("malformed", {})
        assert said(await connection.run("echo", {"text": "fine"})) == ("fine", False)
    finally:
        await connection.aclose()
    if transport == "stdio":
        assert (
            "[tickets] sent a line that is not JSON-RPC (ignored): 'this line is not JSON-RPC {'"
            in caplog.text
        )
    assert "[tickets] malformed answer to malformed" in caplog.text


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_changed_tool_list_is_announced(transport: str, http_fake: FakeMcpHttp) -> None:
    changed = asyncio.Event()
    connection = await open_connection(transport, http_fake, changed=changed)
    try:
        await connection.run("change_tools", {})
        async with asyncio.timeout(10):
            await changed.wait()
        assert "added" in {t.name for t in await connection.list_tools()}
    finally:
        await connection.aclose()


async def test_a_crash_ends_the_connection_with_the_exit_code(tmp_path: Path) -> None:
    connection = await Connection.open("tickets", stdio(), 10, lambda: None)
    try:
        with pytest.raises(McpUnavailable):
            await connection.run("crash", {})
        async with asyncio.timeout(10):
            await connection.closed.wait()
        assert connection.ended == "the server exited with code 3"
        with pytest.raises(McpUnavailable, match="not connected"):
            await connection.run("echo", {"text": "x"})
    finally:
        await connection.aclose()


async def test_a_http_server_that_went_away(http_fake: FakeMcpHttp) -> None:
    connection = await Connection.open("docs", http(http_fake), 10, lambda: None)
    try:
        await http_fake.stop()
        with pytest.raises(McpUnavailable, match="docs: "):
            await connection.run("echo", {"text": "x"})
        assert not connection.alive
    finally:
        await connection.aclose()


async def test_a_command_that_does_not_exist() -> None:
    endpoint = StdioEndpoint("no-such-mcp-server", [], {"PATH": os.environ["PATH"]}, None)
    with pytest.raises(McpUnavailable, match="tickets: command not found: no-such-mcp-server"):
        await Connection.open("tickets", endpoint, 10, lambda: None)


async def test_a_server_that_exits_at_start(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="threadline.mcp.tickets")
    with pytest.raises(
        McpUnavailable, match="tickets: the server exited with code 2 before answering initialize"
    ):
        await Connection.open("tickets", stdio("--exit-at-start", "2"), 10, lambda: None)
    assert "[tickets] cannot start: the ticket database is missing" in caplog.text


async def test_a_server_that_hangs_in_initialize_is_stopped(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    with pytest.raises(McpTimeout, match="tickets: no answer to initialize within 0.3 s"):
        await Connection.open(
            "tickets", stdio("--hang-initialize", "--starts", str(starts)), 0.3, lambda: None
        )
    pid = int(starts.read_text().split()[0])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_http_server_that_hangs_in_initialize() -> None:
    async with FakeMcpHttp(hang_initialize=True) as fake:
        with pytest.raises(McpTimeout, match="docs: no answer to initialize within 0.3 s"):
            await Connection.open("docs", http(fake), 0.3, lambda: None)


async def test_an_unreachable_url() -> None:
    with pytest.raises(McpUnavailable, match="docs: ConnectError"):
        await Connection.open("docs", HttpEndpoint("http://127.0.0.1:9/mcp", {}), 10, lambda: None)


async def test_headers_reach_the_http_server(http_fake: FakeMcpHttp) -> None:
    connection = await Connection.open(
        "docs", http(http_fake, {"Authorization": "Bearer t0ken"}), 10, lambda: None
    )
    await connection.aclose()
    assert http_fake.headers and all(
        h.get("Authorization") == "Bearer t0ken" for h in http_fake.headers
    )


async def test_the_stdio_server_gets_a_minimal_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-secret")
    connection = await Connection.open(
        "tickets", stdio(env={"TICKETS_LOG": "/tmp/t.jsonl"}), 10, lambda: None
    )
    try:
        names = set(json.loads((await connection.run("env", {})).text))
    finally:
        await connection.aclose()
    assert {"PATH", "TICKETS_LOG"} <= names
    assert not names & {"OPENAI_API_KEY", "SLACK_BOT_TOKEN"}


async def test_stderr_goes_to_the_servers_logger(
    log_watch: LogWatch, caplog: pytest.LogCaptureFixture
) -> None:
    connection = await Connection.open("tickets", stdio(), 10, lambda: None)
    try:
        await connection.run("stderr", {"text": "disk almost full"})
        assert await log_watch.wait_for("disk almost full") == "[tickets] disk almost full"
    finally:
        await connection.aclose()
    assert {r.name for r in caplog.records if "disk almost full" in r.getMessage()} == {
        "threadline.mcp.tickets"
    }


def test_results_are_shown_to_the_model_as_text() -> None:
    import mcp_types as types

    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="first"),
            types.ImageContent(type="image", data="AAAA", mime_type="image/png"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(uri="file:///a.txt", text="inside"),
            ),
            types.ResourceLink(type="resource_link", uri="https://x/y", name="report"),
        ]
    )
    assert (
        render(result)
        == "first\n[image/png content, not shown]\ninside\n[link: report https://x/y]"
    )
    structured = types.CallToolResult(content=[], structured_content={"open": 3})
    assert render(structured) == '{"open": 3}'
