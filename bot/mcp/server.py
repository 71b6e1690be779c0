"""One configured MCP server for the life of the process: started once, its tool list read at
start and again when it says the list changed, and started again when a call finds it gone.

A server that keeps failing is tried again only after a delay that doubles with each failure
in a row (computed from the clock, never slept): calls made before then fail at once with the
reason and the time left. A call that succeeds resets the count.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any

from bot.config import McpServerSettings
from bot.errors import McpError, McpUnavailable
from bot.infra.clock import Clock
from bot.mcp.asking import Asker, Output
from bot.mcp.endpoint import Endpoint, RemoteTool
from bot.mcp.process import server_log
from bot.mcp.sdk.connection import Connection, Progress
from bot.mcp.sdk.tasks import TaskStatus

log = logging.getLogger(__name__)

FIRST_DELAY_S = 1.0
MAX_DELAY_S = 300.0


def retry_delay(failures: int) -> float:
    """Seconds to wait before the next start after ``failures`` failures in a row: none after
    the first (a server that died is started again on the next call), then 1, 2, 4… up to 300."""
    if failures <= 1:
        return 0.0
    return float(min(MAX_DELAY_S, FIRST_DELAY_S * 2 ** (failures - 2)))


def cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[output cut: {len(text) - limit:,} more characters]"


class McpServer:
    def __init__(
        self,
        name: str,
        settings: McpServerSettings,
        endpoint: Endpoint,
        clock: Clock,
        idle: Asker | None = None,
    ) -> None:
        self.name = name
        self._idle = idle
        """Answers what the server asks outside a thread's call (None: it is declined)."""
        self.settings = settings
        self.endpoint = endpoint
        self._clock = clock
        self._log = server_log(name)
        self._connection: Connection | None = None
        self._starting = asyncio.Lock()
        self._failures = 0
        self._retry_at = 0.0
        self.last_error: str | None = None
        self.server_label = ""
        """What the server said it is (name, version, protocol) when it last started."""
        self.tools: tuple[RemoteTool, ...] = ()
        self.generation = 0
        """Grows each time :attr:`tools` is replaced."""
        self._tasks: set[asyncio.Task[Any]] = set()
        self._background: asyncio.Task[Any] | None = None
        self._closed = False

    @property
    def running(self) -> bool:
        return self._connection is not None and self._connection.alive

    @property
    def retry_in(self) -> float:
        return max(0.0, self._retry_at - self._clock.monotonic())

    async def start(self) -> bool:
        """Start the server and read its tools; False (logged, and retried later) on failure."""
        try:
            await self._connected()
        except McpError:
            return False
        return True

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        progress: Progress | None = None,
        asker: Asker | None = None,
        whose: str = "",
    ) -> tuple[str, bool]:
        """:meth:`run`, as the (capped) text the model reads and whether the call failed."""
        out = await self.run(tool, arguments, progress, asker, whose)
        return out.text, out.failed

    async def run(
        self,
        tool: str,
        arguments: dict[str, Any],
        progress: Progress | None = None,
        asker: Asker | None = None,
        whose: str = "",
        status: TaskStatus | None = None,
    ) -> Output:
        """Call ``tool`` (its name on the server); the text is capped. Raises :class:`McpError`.
        ``progress`` hears what the server says of how far the call got; ``asker`` answers what
        it asks meanwhile (a form for the person of the thread ``whose``); ``status``, the
        status of the task it runs as, if it does."""
        connection = await self._connected()
        try:
            out = await connection.run(tool, arguments, progress, asker, whose, status)
        except McpUnavailable as exc:
            await self._lost(connection, exc)
            detail = f"{self.name}: {connection.ended}" if connection.ended else str(exc)
            raise McpUnavailable(f"{detail}; it is started again on the next call") from None
        self._failures = 0
        return replace(out, text=cap(out.text, self.settings.max_output_chars))

    def poke(self) -> None:
        """Start the server in the background if it is down and due for another try."""
        if self._closed or self.running or self._starting.locked() or self.retry_in > 0:
            return
        if self._background is None or self._background.done():
            self._background = self._spawn(self.start())

    async def refresh(self) -> None:
        """Read the tool list again (the server said it changed)."""
        connection = self._connection
        if connection is None or not connection.alive:
            return
        try:
            tools = await connection.list_tools()
        except McpError as exc:
            self._log.warning("[%s] could not read its changed tool list: %s", self.name, exc)
            return
        self._set_tools(tools)
        self._log.info("[%s] its tool list changed: %d tools", self.name, len(tools))

    async def aclose(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._connection is not None:
            await self._connection.aclose()
            self._connection = None

    async def _connected(self) -> Connection:
        async with self._starting:
            connection = self._connection
            if connection is not None and connection.alive:
                return connection
            if connection is not None:
                await self._lost(connection, McpUnavailable(f"{self.name}: the connection closed"))
            if self._closed:
                raise McpUnavailable(f"{self.name}: shutting down")
            if (wait := self.retry_in) > 0:
                raise McpUnavailable(f"{self.last_error}; next try in {wait:.0f} s")
            return await self._open()

    async def _open(self) -> Connection:
        try:
            connection = await Connection.open(
                self.name, self.endpoint, self.settings.timeout_s, self._tools_changed, self._idle
            )
        except McpError as exc:
            self._failed(str(exc))
            raise
        try:
            tools = await connection.list_tools()
        except McpError as exc:
            await connection.aclose()
            self._failed(str(exc))
            raise
        if self._closed:  # closed while it started
            await connection.aclose()
            raise McpUnavailable(f"{self.name}: shutting down")
        self._connection = connection
        self.server_label = connection.server_label
        self._set_tools(tools)
        self._log.info("[%s] started: %d tools", self.name, len(tools))
        return connection

    async def _lost(self, connection: Connection, error: McpError) -> None:
        if self._connection is not connection:
            return
        self._connection = None
        await connection.aclose()  # bounded: the process is stopped within a few seconds
        self._failed(f"{self.name}: {connection.ended}" if connection.ended else str(error))

    def _failed(self, error: str) -> None:
        self._failures += 1
        self._retry_at = self._clock.monotonic() + retry_delay(self._failures)
        self.last_error = error
        wait = retry_delay(self._failures)
        after = (
            f"trying again in {wait:.0f} s or later"
            if wait
            else "starting it again on the next call"
        )
        self._log.warning("[%s] unavailable: %s (%s)", self.name, error, after)

    def _tools_changed(self) -> None:
        self._spawn(self.refresh())

    def _set_tools(self, tools: list[RemoteTool]) -> None:
        if tuple(tools) != self.tools:
            self.tools = tuple(tools)
            self.generation += 1

    def _spawn(self, work: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task
