"""Endpoints of the fake MCP server (tests/fakes/mcp_server.py) for the real ``mcp`` client."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Iterator

import pytest

from bot.mcp.endpoint import HttpEndpoint, StdioEndpoint
from bot.mcp.process import server_environment
from tests.fakes.mcp_http import FakeMcpHttp
from tests.fakes.mcp_server import stdio_command


def stdio(*options: str, env: dict[str, str] | None = None) -> StdioEndpoint:
    command = stdio_command(*options)
    return StdioEndpoint(command[0], command[1:], server_environment(os.environ, env or {}), None)


@pytest.fixture
async def http_fake() -> AsyncIterator[FakeMcpHttp]:
    async with FakeMcpHttp() as fake:
        yield fake


def http(fake: FakeMcpHttp, headers: dict[str, str] | None = None) -> HttpEndpoint:
    return HttpEndpoint(fake.url, headers or {})


class LogWatch(logging.Handler):
    """Wakes waiters when a log line containing some text is written (under ``logger``)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self._arrived = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        self._arrived.set()

    async def wait_for(self, text: str, within: float = 10.0) -> str:
        async with asyncio.timeout(within):
            while True:
                found = next((line for line in self.lines if text in line), None)
                if found is not None:
                    return found
                self._arrived.clear()
                await self._arrived.wait()


@pytest.fixture
def log_watch() -> Iterator[LogWatch]:
    watch = LogWatch()
    watched = [logging.getLogger(name) for name in ("threadline.mcp", "bot.mcp")]
    levels = [logger.level for logger in watched]
    for logger in watched:
        logger.addHandler(watch)
        logger.setLevel(logging.DEBUG)
    yield watch
    for logger, level in zip(watched, levels, strict=True):
        logger.removeHandler(watch)
        logger.setLevel(level)
