"""The thread's todo panel: one message, posted once, pinned while work is open, edited in place.

The panel's message id, a hash of its text and whether it is pinned are persisted through
``persist`` whenever one of them changes, so a restart with the same list changes nothing.
Updates are coalesced by one owned worker task: rapid updates send only the newest list, at
most one edit per ``min_edit_interval``, within the shared edit budget (interim priority).
If the platform refuses an edit, the old panel is unpinned and deleted (where the platform
still allows it), and a new one is posted and pinned.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal

from bot.api.surface import StreamTask, Surface, TaskStatus
from bot.errors import EditRefused, MessageTooLong, SurfaceError, SurfaceRateLimited
from bot.infra.clock import Clock
from bot.present.budget import EditBudget, Priority
from bot.present.reply import MAX_FAILURES, TIGHTER
from bot.present.split import MIN_LIMIT
from bot.sessions.model import OPEN, PanelRef, Todo

log = logging.getLogger(__name__)

PersistPanel = Callable[[PanelRef | None], Awaitable[None]]
MARKS = {"pending": "☐", "in_progress": "▶", "completed": "✅", "cancelled": "✖️"}
EMPTY = "**Plan**\n_The plan is empty._"
ITEM_CHARS = 200
"""Item text is shortened to this when the whole list does not fit in one message."""

_Step = Literal["post", "edit", "pin", "unpin"]


def render_todos(todos: Sequence[Todo], limit: int) -> str:
    """The panel's Markdown, at most ``limit`` characters."""
    if not todos:
        return EMPTY
    done = sum(1 for t in todos if t.status == "completed")
    cancelled = sum(1 for t in todos if t.status == "cancelled")
    head = f"**Plan** · {done}/{len(todos)} done" + (
        f", {cancelled} cancelled" if cancelled else ""
    )
    items = [f"{MARKS[t.status]} {' '.join(t.content.split())}" for t in todos]
    text = "\n".join([head, *items])
    if len(text) <= limit:
        return text
    items = [i if len(i) <= ITEM_CHARS else i[: ITEM_CHARS - 1] + "…" for i in items]
    for keep in range(len(items), -1, -1):
        more = len(items) - keep
        text = "\n".join([head, *items[:keep], *([f"… and {more} more"] if more else [])])
        if len(text) <= limit:
            return text
    return head[:limit]


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class TodoPanel:
    def __init__(
        self,
        surface: Surface,
        panel: PanelRef | None,
        persist: PersistPanel,
        *,
        clock: Clock,
        budget: EditBudget,
    ) -> None:
        self._surface = surface
        self._persist = persist
        self._clock = clock
        self._budget = budget
        self._ref = (
            None if panel is None else PanelRef(panel.message_id, panel.content_hash, panel.pinned)
        )
        self._todos: tuple[Todo, ...] | None = None
        self._limit = surface.limits.max_chars
        self._touched = -float("inf")
        self._pin_failed = False
        self._task: asyncio.Task[None] | None = None

    async def update(self, todos: tuple[Todo, ...]) -> None:
        """Show ``todos``; returns at once (the work is coalesced; :meth:`flush` waits for it)."""
        self._todos = todos
        if self._plan() is not None and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._work())

    async def flush(self) -> None:
        """Wait until the newest list is on the platform."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _text(self) -> tuple[str, str, bool]:
        """The panel text, its hash, and whether it should be pinned."""
        todos = self._todos or ()
        text = self._surface.render(render_todos(todos, self._limit))
        open_items = any(t.status in OPEN for t in todos)
        return text, content_hash(text), open_items and self._surface.limits.can_pin

    def _plan(self) -> _Step | None:
        if self._todos is None:
            return None
        _, digest, pin = self._text()
        ref = self._ref
        if ref is None:
            return "post" if self._todos else None
        if ref.content_hash != digest:
            return "edit"
        if pin and not ref.pinned and not self._pin_failed:
            return "pin"
        if not pin and ref.pinned:
            return "unpin"
        return None

    async def _work(self) -> None:
        """Apply the plan until the panel shows the newest list.

        The panel is secondary to the reply: when the platform keeps failing, the worker logs
        and stops, and the next update tries again.
        """
        failures = 0
        while (step := self._plan()) is not None:
            try:
                await self._do(step, self._ref)
                failures = 0
            except SurfaceRateLimited as exc:
                if step == "edit":
                    self._budget.note_rate_limited(exc.retry_after)
                else:
                    await self._clock.sleep(exc.retry_after)
            except MessageTooLong:
                self._limit = int(self._limit * TIGHTER)
                if self._limit < MIN_LIMIT:
                    log.error("the todo panel does not fit in a message; giving up")
                    return
            except SurfaceError:
                failures += 1
                if failures >= MAX_FAILURES:
                    log.error(
                        "todo panel %s failed %d times; giving up", step, failures, exc_info=True
                    )
                    return
                log.warning("todo panel %s failed; retrying", step, exc_info=True)
                await self._clock.sleep(2.0**failures)

    async def _do(self, step: _Step, ref: PanelRef | None) -> None:
        if ref is None:
            await self._post()
        elif step == "edit":
            await self._edit(ref)
        elif step == "pin":
            await self._pin(ref)
        else:
            await self._unpin(ref)

    async def _post(self) -> None:
        text, digest, _ = self._text()
        self._touched = self._clock.monotonic()
        message_id = await self._surface.post(text)
        await self._set(PanelRef(message_id, digest, False))

    async def _edit(self, ref: PanelRef) -> None:
        wait = self._touched + self._surface.limits.min_edit_interval - self._clock.monotonic()
        if wait > 0:
            await self._clock.sleep(wait)
        await self._budget.acquire(self, Priority.INTERIM)
        if self._plan() != "edit" or self._ref is not ref:
            return
        text, digest, _ = self._text()
        self._touched = self._clock.monotonic()
        try:
            await self._surface.edit(ref.message_id, text)
        except EditRefused:
            log.info("the todo panel can no longer be edited; posting it anew")
            await self._repost(ref)
            return
        await self._set(PanelRef(ref.message_id, digest, ref.pinned))

    async def _repost(self, old: PanelRef) -> None:
        """Retire a panel that can no longer be edited; the worker then posts and pins a new one."""
        if old.pinned:
            with contextlib.suppress(SurfaceError):
                await self._surface.unpin(old.message_id)
        with contextlib.suppress(SurfaceError):
            await self._surface.delete(old.message_id)
        self._ref = None
        await self._persist(None)

    async def _pin(self, ref: PanelRef) -> None:
        try:
            await self._surface.pin(ref.message_id)
        except SurfaceRateLimited:
            raise
        except SurfaceError:
            log.warning("could not pin the todo panel; leaving it unpinned", exc_info=True)
            self._pin_failed = True
            return
        await self._set(PanelRef(ref.message_id, ref.content_hash, True))

    async def _unpin(self, ref: PanelRef) -> None:
        try:
            await self._surface.unpin(ref.message_id)
        except SurfaceRateLimited:
            raise
        except SurfaceError:
            log.warning("could not unpin the todo panel", exc_info=True)
        await self._set(PanelRef(ref.message_id, ref.content_hash, False))

    async def _set(self, ref: PanelRef) -> None:
        if ref != self._ref:
            self._ref = ref
            await self._persist(ref)


PLAN_STATUS: dict[str, TaskStatus] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "completed": "complete",
    "cancelled": "error",
}


def plan_of(todos: Sequence[Todo]) -> tuple[str, list[StreamTask]]:
    """The todo list as a plan in a natively streamed reply: its title and one task per item."""
    done = sum(1 for t in todos if t.status == "completed")
    items = [
        StreamTask(
            f"todo-{i}", " ".join(t.content.split()) or "…", PLAN_STATUS.get(t.status, "pending")
        )
        for i, t in enumerate(todos)
    ]
    return f"Plan · {done}/{len(todos)} done", items
