"""An in-memory thread that keeps state and enforces a platform's limits, for presenter tests.

``RecordingSurface`` implements the Surface protocol over a dict of messages. It raises what a
platform raises: ``MessageTooLong`` over ``max_chars`` (or ``accepts_chars``); ``SurfaceRateLimited`` when edits of one
message come faster than ``message_interval`` (a platform rule, none by default: the presenter's
``min_edit_interval`` is its own pacing of interim edits) or edits across the budget key exceed
``edits_per_minute`` (when ``strict``), and when told to; ``EditRefused`` for messages it was told
to refuse. Tests assert on the state it ends in: messages, pins, the call log.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from bot.api.inbound import ThreadKey
from bot.api.surface import Button, SurfaceLimits
from bot.errors import EditRefused, MessageTooLong, SurfaceError, SurfaceRateLimited
from bot.infra.clock import Clock, ManualClock

T = TypeVar("T")
EPSILON = 1e-6
DEFAULT_LIMITS = SurfaceLimits(
    max_chars=2000, min_edit_interval=1.0, edits_per_minute=None, budget_key="test"
)


@dataclass(slots=True)
class FakeMessage:
    id: str
    text: str
    buttons: tuple[Button, ...] = ()
    deleted: bool = False
    edits: int = 0
    first_buttons: tuple[Button, ...] = ()
    """The buttons it was posted with (a click on a page not yet updated uses these)."""
    had_buttons: bool = False
    """It showed buttons at some time."""


@dataclass(frozen=True, slots=True)
class Call:
    at: float
    """The clock's monotonic time when the call arrived."""
    op: str
    message_id: str | None
    text: str | None
    outcome: str
    """``ok`` or the error's class name."""


@dataclass(slots=True)
class EditLedger:
    """Edit times per budget key; share one between surfaces to model a workspace-wide cap."""

    times: dict[str, deque[float]] = field(default_factory=lambda: defaultdict(deque))
    paused_until: dict[tuple[str, str], float] = field(default_factory=dict)
    """(budget key, call kind) → end of the last 429's retry-after."""
    violations: int = 0
    """Calls made while the retry-after of a 429 for the same kind of call had not passed yet."""


class RecordingSurface:
    def __init__(
        self,
        clock: Clock,
        limits: SurfaceLimits = DEFAULT_LIMITS,
        *,
        thread_key: str = "test:thread",
        render: Callable[[str], str] | None = None,
        strict: bool = False,
        ledger: EditLedger | None = None,
        latency: float = 0.0,
        accepts_chars: int | None = None,
        message_interval: float = 0.0,
    ) -> None:
        self.message_interval = message_interval
        self.clock = clock
        self._limits = limits
        self._thread_key = ThreadKey(thread_key)
        self._render = render or (lambda text: text)
        self.strict = strict
        self.ledger = ledger or EditLedger()
        self.latency = latency
        self.accepts_chars = limits.max_chars if accepts_chars is None else accepts_chars
        """The length the platform really accepts (it may refuse less than it declares)."""
        self.messages: dict[str, FakeMessage] = {}
        self.calls: list[Call] = []
        self.pins: list[str] = []
        self.status: str | None = None
        self.status_history: list[str | None] = []
        self._ids = itertools.count(1)
        self._scripted: deque[tuple[frozenset[str], Callable[[], SurfaceError]]] = deque()
        self._refused: set[str] = set()
        self._failing_pins = False

    # --- what tests tell it ---------------------------------------------------------------
    def rate_limit_next(self, n: int, retry_after: float, ops: Sequence[str] = ("edit",)) -> None:
        """Answer the next ``n`` calls of ``ops`` with a 429 carrying ``retry_after``."""
        for _ in range(n):
            self.fail_next(lambda: SurfaceRateLimited(retry_after), ops)

    def fail_next(self, error: Callable[[], SurfaceError], ops: Sequence[str] = ("edit",)) -> None:
        self._scripted.append((frozenset(ops), error))

    def refuse_edits(self, message_id: str) -> None:
        """Every later edit of ``message_id`` raises EditRefused (too old, archived)."""
        self._refused.add(message_id)

    def fail_pins(self) -> None:
        """Pin calls fail (the bot lacks the permission)."""
        self._failing_pins = True

    # --- what tests read --------------------------------------------------------------------
    def live(self) -> list[FakeMessage]:
        return [m for m in self.messages.values() if not m.deleted]

    def texts(self) -> list[str]:
        return [m.text for m in self.live()]

    def visible_text(self) -> str:
        return "\n".join(self.texts())

    @property
    def pinned_ids(self) -> list[str]:
        return list(self.pins)

    def edit_count(self, message_id: str | None = None) -> int:
        return sum(
            1
            for c in self.calls
            if c.op == "edit" and c.outcome == "ok" and message_id in (None, c.message_id)
        )

    def count(self, op: str, outcome: str = "ok") -> int:
        return sum(1 for c in self.calls if c.op == op and c.outcome == outcome)

    # --- the Surface protocol ---------------------------------------------------------------
    @property
    def thread_key(self) -> ThreadKey:
        return self._thread_key

    @property
    def limits(self) -> SurfaceLimits:
        return self._limits

    def render(self, markdown: str) -> str:
        return self._render(markdown)

    async def post(self, text: str, buttons: Sequence[Button] = ()) -> str:
        await self._enter("post", None, text)
        message_id = f"m{next(self._ids)}"
        self.messages[message_id] = FakeMessage(
            message_id,
            text,
            tuple(buttons),
            first_buttons=tuple(buttons),
            had_buttons=bool(buttons),
        )
        self._log("post", message_id, text)
        return message_id

    async def edit(
        self, message_id: str, text: str, buttons: Sequence[Button] = (), *, final: bool = False
    ) -> None:
        message = self._message(message_id)
        await self._enter("edit", message_id, text)
        if message_id in self._refused:
            self._fail("edit", message_id, text, EditRefused(f"cannot edit {message_id}"))
        if self.strict:
            self._check_edit_rate(message_id, text)
        message.text, message.buttons = text, tuple(buttons)
        message.had_buttons = message.had_buttons or bool(buttons)
        message.edits += 1
        self._log("edit", message_id, text)

    async def drop_buttons(self, message_id: str) -> None:
        message = self._message(message_id)
        await self._enter("edit", message_id, message.text)
        message.buttons = ()
        message.edits += 1
        self._log("edit", message_id, message.text)

    async def delete(self, message_id: str) -> None:
        message = self._message(message_id)
        await self._enter("delete", message_id, None)
        message.deleted = True
        if message_id in self.pins:
            self.pins.remove(message_id)
        self._log("delete", message_id, None)

    async def pin(self, message_id: str) -> None:
        self._message(message_id)
        await self._enter("pin", message_id, None)
        if self._failing_pins:
            self._fail("pin", message_id, None, SurfaceError("missing permission to pin"))
        if message_id not in self.pins:
            self.pins.append(message_id)
        self._log("pin", message_id, None)

    async def unpin(self, message_id: str) -> None:
        await self._enter("unpin", message_id, None)
        if message_id in self.pins:
            self.pins.remove(message_id)
        self._log("unpin", message_id, None)

    async def set_status(self, text: str | None) -> None:
        await self._enter("status", None, text)
        self.status = text
        self.status_history.append(text)
        self._log("status", None, text)

    # --- the platform's rules -----------------------------------------------------------------
    async def _enter(self, op: str, message_id: str | None, text: str | None) -> None:
        """Checks made when a call arrives (before its latency)."""
        now = self.clock.monotonic()
        if now + EPSILON < self.ledger.paused_until.get(
            (self._limits.budget_key, op), float("-inf")
        ):
            self.ledger.violations += 1
        for i, (ops, error) in enumerate(self._scripted):
            if op in ops:
                del self._scripted[i]
                self._fail(op, message_id, text, error())
        if text is not None and op in ("post", "edit") and len(text) > self.accepts_chars:
            self._fail(op, message_id, text, MessageTooLong(f"{len(text)} > {self.accepts_chars}"))
        if self.latency > 0:
            await self.clock.sleep(self.latency)
        else:
            await asyncio.sleep(0)

    def _check_edit_rate(self, message_id: str, text: str) -> None:
        now = self.clock.monotonic()
        last = max(
            (
                c.at
                for c in self.calls
                if c.message_id == message_id and c.op in ("post", "edit") and c.outcome == "ok"
            ),
            default=float("-inf"),
        )
        wait = last + self.message_interval - now
        if wait > EPSILON:
            self._fail("edit", message_id, text, SurfaceRateLimited(wait))
        per_minute = self._limits.edits_per_minute
        if per_minute is None:
            return
        window = self.ledger.times[self._limits.budget_key]
        while window and window[0] <= now - 60.0 + EPSILON:
            window.popleft()
        if len(window) >= per_minute:
            self._fail("edit", message_id, text, SurfaceRateLimited(window[0] + 60.0 - now))
        window.append(now)

    def _fail(self, op: str, message_id: str | None, text: str | None, error: SurfaceError) -> None:
        if isinstance(error, SurfaceRateLimited):
            key = (self._limits.budget_key, op)
            until = self.clock.monotonic() + error.retry_after
            self.ledger.paused_until[key] = max(self.ledger.paused_until.get(key, until), until)
        self._log(op, message_id, text, type(error).__name__)
        raise error

    def _log(self, op: str, message_id: str | None, text: str | None, outcome: str = "ok") -> None:
        self.calls.append(Call(self.clock.monotonic(), op, message_id, text, outcome))

    def _message(self, message_id: str) -> FakeMessage:
        message = self.messages.get(message_id)
        if message is None or message.deleted:
            raise EditRefused(f"unknown message {message_id}")
        return message


async def settle(rounds: int = 30) -> None:
    """Let every ready task run until it waits on something."""
    for _ in range(rounds):
        await asyncio.sleep(0)


async def drive(
    clock: ManualClock, awaitable: Awaitable[T], *, step: float = 0.05, limit: float = 600.0
) -> T:
    """Run ``awaitable`` to completion, moving the clock ``step`` seconds at a time."""
    task = asyncio.ensure_future(awaitable)
    try:
        await run_until(clock, task.done, step=step, limit=limit)
        return task.result()
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def run_until(
    clock: ManualClock, condition: Callable[[], bool], *, step: float = 0.05, limit: float = 600.0
) -> None:
    """Move the clock ``step`` at a time until ``condition()`` holds (TimeoutError after ``limit``)."""
    start = clock.monotonic()
    await settle()
    while not condition():
        if clock.monotonic() - start >= limit:
            raise TimeoutError(f"condition still false after {limit}s of fake time")
        await clock.advance(step)
        await settle()
