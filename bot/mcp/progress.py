"""What an MCP tool says of how far it got, as its call's live status line in the thread
("▸ ``tickets__reindex`` · 3 of 10: reading files"): each call carries a progress token, and the
server's progress notifications for it become :class:`~bot.engine.events.ToolProgress` events,
which the presenter shows as for any running call (coalesced edits within the surface's
budget). At most one a second reaches the thread, and a line that did not change is not sent.
A tool called as a task has its task's status message (or status) shown the same way.

A server that floods notifications costs one comparison for each: the notifications are read
by the connection every thread's calls to that server share, so the thread hears its line apart
from it (one line shown at a time, the newest waiting, older ones dropped): a thread slow to
show its line never holds the connection, the answer, or other threads' calls.
"""

from __future__ import annotations

import asyncio
import contextlib

from bot.engine.events import ToolProgress
from bot.tools.base import ToolContext

EVERY_S = 1.0
MAX_CHARS = 200


def progress_line(progress: float, total: float | None, message: str | None) -> str:
    amount = f"{_number(progress)} of {_number(total)}" if total else _number(progress)
    said = " ".join((message or "").split())
    if len(said) > MAX_CHARS:
        said = said[: MAX_CHARS - 1] + "…"
    return f"{amount}: {said}" if said else amount


def task_line(status: str, message: str | None) -> str:
    """A task's status as its call's line: its message, or the status in words."""
    said = " ".join((message or "").split()) or f"task {status.replace('_', ' ')}"
    return said if len(said) <= MAX_CHARS else said[: MAX_CHARS - 1] + "…"


def _number(value: float) -> str:
    return f"{value:g}"


class ProgressLine:
    """The progress callback of one call: throttled, and said only when it changed."""

    def __init__(self, ctx: ToolContext, name: str) -> None:
        self._ctx = ctx
        self._name = name
        self._at: float | None = None
        self._said = ""
        self._waiting: str | None = None
        self._showing: asyncio.Task[None] | None = None

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        await self._say(progress_line(progress, total, message))

    async def task(self, status: str, message: str | None) -> None:
        """The status callback of a tool called as a task."""
        await self._say(task_line(status, message))

    async def _say(self, text: str) -> None:
        events = self._ctx.events
        if events is None:
            return
        now = self._ctx.clock.monotonic()
        if text == self._said or (self._at is not None and now - self._at < EVERY_S):
            return
        self._at, self._said = now, text
        if self._showing is not None and not self._showing.done():
            self._waiting = text  # the newest replaces any line still waiting
            return
        self._showing = asyncio.create_task(self._show(text))

    async def _show(self, text: str | None) -> None:
        events = self._ctx.events
        while text is not None and events is not None:
            await events(ToolProgress(self._ctx.call_id, self._name, text))
            text, self._waiting = self._waiting, None

    async def aclose(self) -> None:
        """The call ended: a line still being shown is moot (the call's end replaces it)."""
        showing, self._showing = self._showing, None
        if showing is not None and not showing.done():
            showing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await showing
