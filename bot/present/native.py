"""A reply streamed with the platform's own streaming (Slack's ``chat.startStream`` family).

The surface offers it as :class:`~bot.api.surface.NativeStreams`. Text is only ever
appended: one owned flusher task sends what was rendered since the last call, within the
stream methods' own budgets (shared per ``budget_key``: starts, appends, stops), at most once
per ``min_edit_interval`` per stream while the text grows and at once for the end. Tool calls
and the todo list go along as task cards and a plan.

A reply rolls over to a new stream before the platform would stop taking appends (its age) or
a message would be too long. Any failure other than a rate limit — a refused channel, an
expired stream, a too long append, text whose rendering changed behind what was sent — hands
the reply to a :class:`~bot.present.reply.ReplyStream`, which adopts the streamed messages and
edits them to the exact final text. In ``auto`` use (``StreamLimits.prefer`` false) a reply
whose stream could not start at once goes to edits from the start, so the first words never
wait for the start budget (nor, with several workers, for a slot of the start pace the
store would give later).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re

from bot.api.surface import Button, NativeStreams, StreamTask, Surface
from bot.errors import SurfaceError, SurfaceRateLimited
from bot.infra.clock import Clock, sleep_until_set
from bot.present.budget import BudgetRegistry, Priority
from bot.present.reply import OnLive, ReplyStream, Written
from bot.sessions.model import LiveMessage

log = logging.getLogger(__name__)

STREAM_BURST = 4
"""Starts (and stops) allowed at once before the steady pace applies."""
APPEND_BURST = 8
_LEADING_BLANK_LINES = re.compile(r"^(?:[ \t]*\n)+")


class _FallBack(Exception):
    """Internal: this reply goes on by editing messages."""


class NativeReply:
    def __init__(
        self,
        surface: Surface,
        streams: NativeStreams,
        clock: Clock,
        budgets: BudgetRegistry,
        edits: ReplyStream,
        on_live: OnLive | None = None,
    ) -> None:
        self._surface = surface
        self._on_live = on_live
        self._streams = streams
        self._clock = clock
        self._limits = streams.stream_limits
        key = self._limits.budget_key
        self._starts = budgets.for_key(f"{key}:start", self._limits.starts_per_minute, STREAM_BURST)
        self._appends = budgets.for_key(
            f"{key}:append", self._limits.appends_per_minute, APPEND_BURST
        )
        self._stops = budgets.for_key(f"{key}:stop", self._limits.stops_per_minute, STREAM_BURST)
        self._interval = surface.limits.min_edit_interval
        self._edits = edits
        self._fell_back = False
        self._written = Written()
        self._final: str | None = None
        self._tasks: dict[str, StreamTask] = {}
        self._sent_tasks: dict[str, StreamTask] = {}
        self._plan: str | None = None
        self._sent_plan: str | None = None
        self._sent = ""
        """Rendered text the streams show, all of them together."""
        self._done: list[tuple[str, str]] = []
        """Streams rolled over from: (id, the text each shows)."""
        self._stream: str | None = None
        self._stream_from = 0
        """Where the current stream's text starts in ``_sent``."""
        self._started_at = 0.0
        self._touched = 0.0
        self._wake = asyncio.Event()
        self._finishing = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # --- what the presenter calls (the same as on a ReplyStream) -----------------------------
    @property
    def text(self) -> str:
        return self._written.text

    @property
    def has_text(self) -> bool:
        return self._written.has_text

    def ends_with(self, suffix: str) -> bool:
        return self._written.ends_with(suffix)

    @property
    def finished(self) -> bool:
        return self._final is not None

    @property
    def message_ids(self) -> tuple[str, ...]:
        """The messages the reply shows now, first to last (streamed, or edited after a
        fallback)."""
        if self._fell_back:
            return self._edits.message_ids
        current = () if self._stream is None else (self._stream,)
        return (*(stream for stream, _ in self._done), *current)

    @property
    def streaming(self) -> bool:
        """Still streaming natively (not handed over to edits)."""
        return not self._fell_back

    def append(self, text: str) -> None:
        if self._final is not None:
            raise RuntimeError("the reply is finished")
        if not text:
            return
        self._written.add(text)
        if self._fell_back:
            self._edits.append(text)
        else:
            self._kick()

    def set_footer(self, footer: str | None, *, alone: bool = False) -> None:
        """Tool calls show as task cards here; the footer only matters after a fallback."""
        self._edits.set_footer(footer)  # the progress shows in the task card meanwhile

    def set_buttons(self, buttons: tuple[Button, ...]) -> None:
        """A streamed message has no buttons; a message edited after a fallback does."""
        self._edits.set_buttons(buttons)

    def set_task(self, task: StreamTask) -> None:
        if self._final is None and not self._fell_back:
            self._tasks[task.id] = task
            if self._stream is not None or self._written.has_text:
                self._kick()

    def set_plan(self, title: str, items: list[StreamTask]) -> None:
        if self._final is None and not self._fell_back:
            self._plan = title
            for item in items:
                self._tasks[item.id] = item
            if self._stream is not None or self._written.has_text:
                self._kick()

    async def finish(self, suffix: str = "") -> None:
        """Land the final text exactly (natively, or by edits after a fallback); idempotent."""
        if self._final is None:
            self._final = self.text + suffix
            self._finishing.set()
            for budget in (self._starts, self._appends, self._stops):
                budget.promote(self)
            if self._fell_back:
                await self._edits.finish(suffix)
                return
            if self._task is not None or self._final.strip():
                self._kick()
        if self._task is not None:
            await asyncio.shield(self._task)
        if self._fell_back:
            await self._edits.finish()

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._edits.aclose()

    # --- the flusher -------------------------------------------------------------------------
    def _kick(self) -> None:
        self._wake.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        try:
            while True:
                self._wake.clear()
                if await self._step():
                    continue
                if self._final is not None:
                    await self._stop_stream()
                    return
                await self._wake.wait()
        except (_FallBack, SurfaceError) as exc:
            log.info("native streaming ended (%s); editing the message instead", exc)
            await self._fall_back()

    def _wanted(self) -> str:
        body = self._final if self._final is not None else self.text
        return _LEADING_BLANK_LINES.sub("", self._surface.render(body).rstrip())

    async def _step(self) -> bool:
        """Make the next call; False when the streams show everything there is."""
        wanted = self._wanted()
        if not wanted.startswith(self._sent):
            raise _FallBack("the rendered text changed behind what was streamed")
        pending = wanted[len(self._sent) :]
        tasks = [t for t in self._tasks.values() if self._sent_tasks.get(t.id) != t]
        plan = self._plan if self._plan != self._sent_plan else None
        if not pending and not tasks and plan is None:
            return False
        if self._stream is None:
            if not pending.strip():
                return False  # a stream starts with words
            await self._start(pending, tasks, plan)
        elif self._must_roll_over(pending):
            await self._stop_stream()
        else:
            await self._append(tasks, plan)
        return True

    def _must_roll_over(self, pending: str) -> bool:
        shown = len(self._sent) - self._stream_from
        too_old = self._clock.monotonic() - self._started_at >= self._limits.max_age
        return too_old or (shown > 0 and shown + len(pending) > self._limits.max_chars)

    def _priority(self) -> Priority:
        return Priority.FINAL if self._final is not None else Priority.INTERIM

    async def _start(self, pending: str, tasks: list[StreamTask], plan: str | None) -> None:
        if self._limits.prefer or self._done:
            await self._starts.acquire(self, self._priority())
        elif not await self._starts.now_or_never(self, self._priority()):
            raise _FallBack("no stream can start at once")  # it never waits for a start
        piece = pending[: self._limits.max_chars]
        try:
            stream = await self._streams.start(piece, tasks, self._plan)
        except SurfaceRateLimited as exc:
            self._starts.note_rate_limited(exc.retry_after)
            if not self._limits.prefer or not self._done:
                raise _FallBack("the stream could not start: rate limited") from None
            return
        if stream is None:
            raise _FallBack("streaming is not offered in this thread")
        now = self._clock.monotonic()
        self._stream, self._stream_from, self._started_at, self._touched = (
            stream,
            len(self._sent),
            now,
            now,
        )
        self._sent += piece
        self._mark_sent(tasks, self._plan)
        if self._on_live is not None:  # remembered, so that a restart ends it
            await self._on_live(stream, LiveMessage(stream, None, stream=True))

    async def _append(self, tasks: list[StreamTask], plan: str | None) -> None:
        assert self._stream is not None
        wait = self._touched + self._interval - self._clock.monotonic()
        if (
            self._final is None
            and wait > 0
            and await sleep_until_set(self._clock, wait, self._finishing)
        ):
            return
        if not await self._appends.acquire(self, self._priority(), self._finishing_if_interim()):
            return
        pending = self._wanted()[len(self._sent) :]  # the newest text, after the wait
        tasks = [t for t in self._tasks.values() if self._sent_tasks.get(t.id) != t]
        plan = self._plan if self._plan != self._sent_plan else None
        room = self._limits.max_chars - (len(self._sent) - self._stream_from)
        piece = pending[: max(0, room)]
        try:
            await self._streams.append(self._stream, piece, tasks, plan)
        except SurfaceRateLimited as exc:
            self._appends.note_rate_limited(exc.retry_after)
            return
        self._touched = self._clock.monotonic()
        self._sent += piece
        self._mark_sent(tasks, plan)

    def _finishing_if_interim(self) -> asyncio.Event | None:
        return None if self._final is not None else self._finishing

    def _mark_sent(self, tasks: list[StreamTask], plan: str | None) -> None:
        for task in tasks:
            self._sent_tasks[task.id] = task
        if plan is not None:
            self._sent_plan = plan

    async def _stop_stream(self) -> None:
        """End the current stream (at the end, or to roll over); its text stays as it is."""
        stream = self._stream
        if stream is None:
            return
        while True:
            await self._stops.acquire(self, Priority.FINAL)
            try:
                await self._streams.stop(stream)
            except SurfaceRateLimited as exc:
                self._stops.note_rate_limited(exc.retry_after)
                continue
            break
        self._done.append((stream, self._sent[self._stream_from :]))
        self._stream = None
        if self._on_live is not None:
            await self._on_live(stream, None)

    async def _fall_back(self) -> None:
        """Go on by editing: the streamed messages are adopted and edited like our own."""
        self._fell_back = True
        if self._stream is not None:
            self._done.append((self._stream, self._sent[self._stream_from :]))
            self._stream = None
        for stream, shown in self._done:
            self._edits.adopt(stream, shown)
        if self._final is not None:
            self._edits.append(self._final)
            await self._edits.finish()
        else:
            self._edits.append(self.text)
