"""Tools called as tasks (MCP 2025-11-25): ``tools/call`` carries ``task: {ttl}`` and the server
answers at once with a task (``CreateTaskResult``); the client polls ``tasks/get`` (at the
task's ``pollInterval``, sooner when a ``notifications/tasks/status`` says it changed) until the
task is over, then fetches its result with ``tasks/result``. A task that needs input
(``input_required``) has its result fetched at once: the server asks its questions (forms)
during that request, as it would during a plain call. A call that ends before its task
(Stop, a time limit, a lost answer) sends ``tasks/cancel``.

The SDK validates every ``tools/call`` answer as a tool result, so the relay
(:class:`~bot.mcp.sdk.transports.Relay`) hands the session a stand-in result carrying the task
under :data:`TASK_META`, and passes the status notifications to a :class:`TaskBoard`.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import mcp_types as types

from bot.errors import McpError

log = logging.getLogger(__name__)

TASK_META = "threadline/created-task"
"""Where the relay's stand-in tool result carries the task the server created."""
TTL_MS = 3_600_000
"""How long the server is asked to keep a task (an hour)."""
POLL_S = 1.0
"""How often a task is polled when the server suggests no interval."""
MIN_POLL_S = 0.1
MAX_POLL_S = 30.0
TERMINAL = frozenset({"completed", "failed", "cancelled"})
_KEPT = 256


class TaskStatus(Protocol):
    """Hears a task's status and its message (if any) each time either changes."""

    async def __call__(self, status: str, message: str | None) -> None: ...


def poll_delay(task: types.Task) -> float:
    """Seconds until the next ``tasks/get``: the server's ``pollInterval``, kept within
    0.1 and 30 s (1 s when it suggests none)."""
    if task.poll_interval is None:
        return POLL_S
    return min(MAX_POLL_S, max(MIN_POLL_S, task.poll_interval / 1000))


def created_task(result: types.CallToolResult) -> types.Task | None:
    """The task a task-augmented call created, or None when the server answered at once."""
    raw = (result.meta or {}).get(TASK_META)
    return types.Task.model_validate(raw, by_name=False) if isinstance(raw, dict) else None


class TaskBoard:
    """The latest status the server announced for each task (``notifications/tasks/status``),
    and a wake-up for whoever polls it."""

    def __init__(self) -> None:
        self._seen: OrderedDict[str, types.Task] = OrderedDict()
        self._changed = asyncio.Event()

    def announced(self, params: Any) -> None:
        try:
            task = types.Task.model_validate(params, by_name=False)
        except ValueError:
            log.warning("a task status notification that is not a task: ignored")
            return
        self._seen[task.task_id] = task
        self._seen.move_to_end(task.task_id)
        while len(self._seen) > _KEPT:
            self._seen.popitem(last=False)
        self._changed.set()

    def take(self, task_id: str) -> types.Task | None:
        return self._seen.pop(task_id, None)

    async def wait(self, task_id: str, delay: float) -> types.Task | None:
        """The announced status of ``task_id`` as soon as there is one, or None after
        ``delay`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + delay
        while (found := self.take(task_id)) is None:
            left = deadline - loop.time()
            if left <= 0:
                return None
            self._changed.clear()
            try:
                async with asyncio.timeout(left):
                    await self._changed.wait()
            except TimeoutError:
                return self.take(task_id)
        return found


Get = Callable[[str], Awaitable[types.Task]]
Fetch = Callable[[str], Awaitable[types.CallToolResult]]


async def follow(
    name: str,
    task: types.Task,
    board: TaskBoard,
    get: Get,
    fetch: Fetch,
    status: TaskStatus | None,
) -> types.CallToolResult:
    """Poll ``task`` until it is over (or needs input), then its result. ``name`` (the server
    and tool) is for errors. A cancelled task, or a failed one without a result, raises
    :class:`McpError`."""
    said: tuple[str, str | None] | None = None
    while True:
        if status is not None and (task.status, task.status_message) != said:
            said = (task.status, task.status_message)
            await status(task.status, task.status_message)
        if task.status in TERMINAL or task.status == "input_required":
            break
        announced = await board.wait(task.task_id, poll_delay(task))
        task = announced if announced is not None else await get(task.task_id)
    if task.status == "cancelled":
        why = f": {task.status_message}" if task.status_message else ""
        raise McpError(f"{name}: the server cancelled its task{why}")
    try:
        return await fetch(task.task_id)
    except McpError:
        if task.status != "failed":
            raise
        why = task.status_message or "no reason given"
        raise McpError(f"{name}: its task failed: {why}") from None
