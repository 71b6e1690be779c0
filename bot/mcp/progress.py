"""What an MCP tool says of how far it got, as its call's live status line in the thread
("▸ ``tickets__reindex`` · 3 of 10: reading files"): each call carries a progress token, and the
server's progress notifications for it become :class:`~bot.engine.events.ToolProgress` events,
which the presenter shows as for any running call (coalesced edits within the surface's
budget). At most one a second reaches the thread, and a line that did not change is not sent.
"""

from __future__ import annotations

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


def _number(value: float) -> str:
    return f"{value:g}"


class ProgressLine:
    """The progress callback of one call: throttled, and said only when it changed."""

    def __init__(self, ctx: ToolContext, name: str) -> None:
        self._ctx = ctx
        self._name = name
        self._at: float | None = None
        self._said = ""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        events = self._ctx.events
        if events is None:
            return
        text = progress_line(progress, total, message)
        now = self._ctx.clock.monotonic()
        if text == self._said or (self._at is not None and now - self._at < EVERY_S):
            return
        self._at, self._said = now, text
        await events(ToolProgress(self._ctx.call_id, self._name, text))
