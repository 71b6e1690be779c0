"""One streamed reply: text deltas in, as few platform calls as the limits need out.

The first visible text is posted at once. After that one owned flusher task edits the message
with the newest text only, at most once per ``min_edit_interval`` per message (interim edits;
the final edit does not wait for it) and within the shared :class:`~bot.present.budget.EditBudget`.
Where the surface allows it (``fresh_final_after``) and the budget would hold the final edit
back longer than that, the final text is posted as new messages instead and the superseded
drafts are handed to ``discard`` (deleted at low priority), so a busy workspace's edit budget
never holds up a finished answer. Rendered text is split at the platform's
limit: the last chunk is the message being edited, text beyond it continues in new messages,
and a message that has received its complete chunk is left alone until the final check.
:meth:`ReplyStream.finish` returns once every message shows exactly the final text.

Buttons (a run's Stop) ride on the message being written. Before a message shows them, what it
shows of the answer goes to ``on_live`` (and again before each edit that keeps them), so that a
restart can put the message back without them from that record alone; a placeholder
("Working…") holds the message, with its buttons, until the text takes it over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from bot.api.surface import Button, Surface
from bot.errors import EditRefused, MessageTooLong, SurfaceError, SurfaceRateLimited
from bot.infra.clock import Clock, sleep_until_set
from bot.present.budget import EditBudget, Priority
from bot.present.split import MIN_LIMIT, open_block, split_message
from bot.sessions.model import LiveMessage

log = logging.getLogger(__name__)

OnLive = Callable[[str, LiveMessage | None], Awaitable[None]]
"""Told what a message that shows the Stop button (or still streams) is, before it shows it,
so that a restart can mend it; None once it shows neither any more."""
Discard = Callable[[str], None]
"""Takes a superseded draft's message id, to delete it later."""
MAX_FAILURES = 3
"""Consecutive unexplained platform failures before a stream gives up."""
TIGHTER = 0.8
"""How much to shrink the split limit when the platform says a message is too long."""


@dataclass(slots=True)
class _Message:
    id: str
    text: str
    touched: float
    """Monotonic time of the last post or edit."""
    sealed: bool
    """It shows its complete chunk; later text goes to other messages."""
    buttons: tuple[Button, ...] = ()
    recorded: bool = False
    """It went to ``on_live``: it may show buttons (forgotten when it shows none again)."""


@dataclass(frozen=True, slots=True)
class _Op:
    kind: Literal["post", "edit", "delete"]
    index: int
    text: str = ""
    seal: bool = False
    buttons: tuple[Button, ...] = ()


class Written:
    """The Markdown of a reply received so far: appended in pieces, joined when read."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._tail = ""
        self.has_text = False
        """Something other than whitespace was appended."""

    def add(self, text: str) -> None:
        self._parts.append(text)
        self._tail = (self._tail + text)[-2:]
        self.has_text = self.has_text or not text.isspace()

    @property
    def text(self) -> str:
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def ends_with(self, suffix: str) -> bool:
        """Whether the text ends with ``suffix`` (at most two characters)."""
        return self._tail.endswith(suffix)


class ReplyStream:
    def __init__(
        self,
        surface: Surface,
        clock: Clock,
        budget: EditBudget,
        on_live: OnLive | None = None,
        discard: Discard | None = None,
        posts: EditBudget | None = None,
        *,
        spare: bool = False,
    ) -> None:
        self._surface = surface
        self._clock = clock
        self._budget = budget
        self._posts = posts
        """The budget of new messages where posts are paced (a Slack channel's)."""
        self._post_priority = Priority.SPARE if spare else Priority.INTERIM
        """``spare``: its posts go only when no other reply waits to post (a control message
        that a short run ends before it shows costs nothing)."""
        self._on_live = on_live
        self._discard = discard
        self._drafts: list[_Message] = []
        self._limit = surface.limits.max_chars
        self._interval = surface.limits.min_edit_interval
        self._written = Written()
        self._footer: str | None = None
        self._footer_alone = False
        self._placeholder: str | None = None
        self._buttons: tuple[Button, ...] = ()
        self._final: str | None = None
        self._messages: list[_Message] = []
        self._wake = asyncio.Event()
        self._finishing = asyncio.Event()
        """Set by :meth:`finish`: an interim edit's pause is cut short for the final one."""
        self._task: asyncio.Task[None] | None = None
        self._failures = 0
        self._split_key: tuple[int, bool, int] | None = None
        self._split_value: tuple[list[str], str | None] = ([], None)

    @property
    def text(self) -> str:
        """The Markdown received so far (without footer)."""
        return self._written.text

    @property
    def has_text(self) -> bool:
        """Something other than whitespace was appended."""
        return self._written.has_text

    def ends_with(self, suffix: str) -> bool:
        """Whether the text so far ends with ``suffix`` (at most two characters)."""
        return self._written.ends_with(suffix)

    @property
    def finished(self) -> bool:
        return self._final is not None

    @property
    def message_ids(self) -> tuple[str, ...]:
        """The messages the reply shows now, first to last (not the drafts it left)."""
        return tuple(m.id for m in self._messages)

    def append(self, text: str) -> None:
        if self._final is not None:
            raise RuntimeError("the reply is finished")
        if text:
            self._written.add(text)
            self._kick()

    def set_footer(self, footer: str | None, *, alone: bool = False) -> None:
        """A transient line under the text (``_running `grep`…_``); never part of the final.
        ``alone``: shown even before any text (a long call's progress), in a message of its
        own that the text then takes over (or that goes if no text ever comes)."""
        alone = alone and footer is not None
        if (footer, alone) != (self._footer, self._footer_alone) and self._final is None:
            self._footer, self._footer_alone = footer, alone
            if self._task is not None or alone:
                self._kick()

    def set_placeholder(self, text: str | None) -> None:
        """What the reply shows (with its buttons) while it has nothing else to show ("Working…");
        the text then takes the message over, and with no text at all it goes at the end."""
        if text != self._placeholder and self._final is None:
            self._placeholder = text
            self._kick()

    def set_buttons(self, buttons: tuple[Button, ...]) -> None:
        """Buttons on the message being written (a Stop button); the final text has none."""
        if buttons != self._buttons and self._final is None:
            self._buttons = buttons
            if self._task is not None:
                self._kick()

    async def finish(self, suffix: str = "") -> None:
        """Land the final text (what was appended, then ``suffix``) exactly; idempotent.

        With no text at all nothing is posted. Raises the error that stopped the stream, if any.
        """
        if self._final is None:
            self._final = self.text + suffix
            self._footer = None
            self._finishing.set()
            self._budget.promote(self)
            if self._posts is not None:
                self._posts.promote(self)
            if self._task is not None or self._final.strip():
                self._kick()
        if self._task is not None:
            await asyncio.shield(self._task)

    async def aclose(self) -> None:
        """Stop the flusher without waiting for anything to land."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _kick(self) -> None:
        self._wake.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        while True:
            self._wake.clear()
            op = self._plan()
            if op is None:
                if self._final is not None:
                    self._sweep()
                    return
                await self._wake.wait()
                continue
            await self._apply(op)

    def _split(self) -> tuple[list[str], str | None]:
        """The text cut into messages, and the code block left open at its end (while
        streaming); computed again only when the text, the limit or finality changed (the text
        only grows, so its length tells)."""
        final = self._final is not None
        body = self._final if self._final is not None else self.text
        key = (len(body), final, self._limit)
        if key != self._split_key:
            chunks = split_message(self._surface.render(body), self._limit) if body.strip() else []
            marker = open_block(chunks[-1]) if chunks and not final else None
            self._split_key, self._split_value = key, (chunks, marker)
        return self._split_value

    def _chunks(self) -> list[str]:
        """What the messages should show now, newest text only."""
        split, marker = self._split()
        chunks = list(split)
        if self._final is not None:
            return chunks
        if not chunks:  # a footer shown alone, a placeholder, or nothing yet
            alone = self._footer if self._footer_alone else self._placeholder
            return [self._surface.render(alone)] if alone else []
        tail = chunks[-1]
        if marker is not None:
            tail += "\n" + marker  # show streaming code as code
        elif self._footer:
            tail += "\n\n" + self._surface.render(self._footer)
        if len(tail) <= self._limit:
            chunks[-1] = tail
        return chunks

    def _plan(self) -> _Op | None:
        """The next call to make, or None when the thread shows what it should."""
        final = self._final is not None
        chunks = self._chunks()
        last = len(chunks) - 1
        buttons = () if final else self._buttons
        for i, msg in enumerate(self._messages):
            if i >= len(chunks):
                return _Op("delete", i) if final else None
            if msg.sealed and not final:
                continue
            seal = i < last
            wanted = buttons if i == last else ()
            if msg.text != chunks[i] or msg.buttons != wanted:
                return _Op("edit", i, chunks[i], seal, wanted)
            msg.sealed = seal
        if len(chunks) > len(self._messages):
            i = len(self._messages)
            return _Op("post", i, chunks[i], i < last, buttons if i == last else ())
        return None

    def _bare(self, index: int) -> str:
        """What message ``index`` shows of the answer (no footer, no placeholder; a code block
        left open is closed): what a restart puts back."""
        split, marker = self._split()
        if index >= len(split):
            return ""
        return split[index] + ("\n" + marker if marker and index == len(split) - 1 else "")

    def adopt(self, message_id: str, shown: str) -> None:
        """Continue in a message posted elsewhere (a native stream that ended early); it is
        edited to the final text like one of ours (and, recorded as it was, forgotten then)."""
        adopted = _Message(message_id, shown, self._clock.monotonic(), False)
        adopted.recorded = self._on_live is not None
        self._messages.append(adopted)

    async def _live(self, msg: _Message, text: str | None) -> None:
        """Tell ``on_live`` what ``msg`` is now (None: nothing to mend any more)."""
        if self._on_live is None or (text is None and not msg.recorded):
            return
        await self._on_live(msg.id, None if text is None else LiveMessage(msg.id, text))
        msg.recorded = text is not None

    async def _post_anew(self, index: int) -> bool:
        """Whether the final text should be posted as new messages from ``index`` on, because
        the edit budget would hold it back too long (the old ones become drafts to delete)."""
        after = self._surface.limits.fresh_final_after
        if after is None or self._final is None or self._discard is None:
            return False
        if self._budget.wait_estimate() <= after:
            return False
        log.info("edit budget busy: posting the final text anew instead of editing")
        for draft in self._messages[index:]:
            await self._live(draft, "" if draft.recorded else None)  # a restart deletes it
        self._drafts.extend(self._messages[index:])
        del self._messages[index:]
        return True

    def _sweep(self) -> None:
        drafts, self._drafts = self._drafts, []
        if self._discard is not None:
            for draft in drafts:
                self._discard(draft.id)

    async def _wait_to_edit(self, op: _Op) -> _Op | None:
        """Wait for the edit's turn; the newest edit of that message then, or None to plan
        again (the reply finished meanwhile, or the text moved on to another message)."""
        final = self._final is not None
        if await self._post_anew(op.index):
            return None
        wait = self._messages[op.index].touched + self._interval - self._clock.monotonic()
        if wait > 0 and not final and await sleep_until_set(self._clock, wait, self._finishing):
            return None  # the reply is finished meanwhile: plan the final edit instead
        priority = Priority.FINAL if final else Priority.INTERIM
        if not await self._budget.acquire(self, priority, None if final else self._finishing):
            return None  # finished while waiting: plan the final edit (or post it anew)
        newest = self._plan()  # the text may have grown while waiting: send the newest
        if newest is None or newest.kind != "edit" or newest.index != op.index:
            return None
        return newest

    async def _wait_to_post(self, op: _Op) -> _Op | None:
        """Wait for the post's turn in its channel; the newest text to post then, or None to
        plan again (the reply finished meanwhile: its first post may be its final text)."""
        if self._posts is None:
            return op
        final = self._final is not None
        priority = Priority.FINAL if final else self._post_priority
        if not await self._posts.acquire(self, priority, None if final else self._finishing):
            return None
        newest = self._plan()  # the text may have grown while waiting: post the newest
        if newest is None or newest.kind != "post" or newest.index != op.index:
            return None
        return newest

    async def _turn(self, op: _Op) -> _Op | None:
        """Wait for the call's turn in its budget: the call to make then, or None to plan again."""
        if op.kind == "edit":
            return await self._wait_to_edit(op)
        if op.kind == "post":
            return await self._wait_to_post(op)
        return op

    async def _rate_limited(self, op: _Op, retry_after: float) -> None:
        """A 429: the budget the call drew on waits it out (a delete waits here)."""
        log.info("%s rate limited; retrying in %.1fs", op.kind, retry_after)
        if op.kind == "edit":
            self._budget.note_rate_limited(retry_after)
        elif op.kind == "post" and self._posts is not None:
            self._posts.note_rate_limited(retry_after)
        else:
            await self._clock.sleep(retry_after)

    async def _apply(self, op: _Op) -> None:
        turn = await self._turn(op)
        if turn is None:
            return
        op = turn
        try:
            await self._call(op)
        except SurfaceRateLimited as exc:
            await self._rate_limited(op, exc.retry_after)
        except EditRefused:
            log.info("edit of message %d refused; posting it anew", op.index)
            await self._drop_from(op.index)
        except MessageTooLong:
            self._limit = int(self._limit * TIGHTER)
            if self._limit < MIN_LIMIT:
                raise
            log.info("message too long; splitting at %d characters", self._limit)
        except SurfaceError:
            self._failures += 1
            if self._failures >= MAX_FAILURES:
                raise
            log.warning(
                "%s failed (%d/%d); retrying", op.kind, self._failures, MAX_FAILURES, exc_info=True
            )
            await self._clock.sleep(2.0**self._failures)
        else:
            self._failures = 0

    async def _call(self, op: _Op) -> None:
        now = self._clock.monotonic()
        if op.kind == "post":
            # a message whose id must be recorded first is posted without its buttons: they come
            # with an edit once the id and its text are recorded, so a crash right after the
            # post leaves no button behind (and a reply final at its first post records nothing)
            shown = () if self._on_live is not None else op.buttons
            message_id = await self._surface.post(op.text, shown)
            self._messages.append(_Message(message_id, op.text, now, op.seal, shown))
        elif op.kind == "edit":
            msg = self._messages[op.index]
            if op.buttons:  # what it shows is recorded before it shows it
                await self._live(msg, self._bare(op.index))
            msg.touched = now
            await self._surface.edit(msg.id, op.text, op.buttons, final=self._final is not None)
            msg.text, msg.sealed, msg.buttons = op.text, op.seal, op.buttons
            if not op.buttons:
                await self._live(msg, None)
        else:
            await self._drop_from(op.index)

    async def _drop_from(self, index: int) -> None:
        """Delete messages ``index``… (they are posted again from the current text)."""
        doomed, self._messages = self._messages[index:], self._messages[:index]
        for msg in doomed:
            await self._delete(msg)

    async def _delete(self, msg: _Message) -> None:
        """Delete ``msg`` (after a rate limit's wait); failing that, later at low priority."""
        for _ in range(MAX_FAILURES):
            try:
                await self._surface.delete(msg.id)
            except SurfaceRateLimited as exc:
                await self._clock.sleep(exc.retry_after)
                continue
            except SurfaceError:
                log.warning("could not delete superseded message %s", msg.id, exc_info=True)
                break
            await self._live(msg, None)
            return
        if self._discard is not None:
            self._discard(msg.id)
        await self._live(msg, "" if msg.recorded else None)  # a restart deletes it
