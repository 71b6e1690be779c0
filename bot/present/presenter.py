"""The engine's event sink for one run: the streamed reply, the status line, the todo panel,
and the Stop button.

A run with a Stop button shows it from its first second (:data:`WORKING_AFTER`) to its end: on
the reply being written, which says "Working…" until there is text (a reply that was to stream
natively but is edited instead carries it too); beside a native stream, which cannot carry a
button, on a control message of its own ("Working…" and Stop), posted once the second has
passed (when no other reply waits to post in the channel) and deleted when the run ends.

Handling an event never waits for the platform, except :class:`Finished` and :class:`Failed`,
which return once the final text, the todo panel and the status line have landed. Call :meth:`Presenter.close` in a ``finally``:
it lands whatever is left (a run that stopped without either event) and stops the tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace

from bot.api.surface import (
    Button,
    PrivateNotes,
    StreamTask,
    Surface,
    TaskStatus,
    native_streams,
)
from bot.api.transfer import file_transfer
from bot.approvals.models import ApprovalRequest
from bot.engine.events import (
    ApprovalNeeded,
    CallAllowed,
    EngineEvent,
    Failed,
    Finished,
    FormNeeded,
    ModelCallStarted,
    Notice,
    SignInEnded,
    SignInNeeded,
    TextDelta,
    Thinking,
    TodosChanged,
    ToolFinished,
    ToolProgress,
    ToolStarted,
)
from bot.errors import SurfaceError
from bot.infra.clock import Clock
from bot.mcp.pending import FormStatus, PendingForm
from bot.present.approval_card import post_allowed, post_card, ran_line
from bot.present.budget import BudgetRegistry
from bot.present.form_card import card_text as form_text
from bot.present.form_card import post_form_card
from bot.present.native import NativeReply
from bot.present.overflow import Overflow
from bot.present.reply import OnLive, ReplyStream
from bot.present.sign_in_card import card_buttons, card_text, ended_text, note_text, unkept_text
from bot.present.todo_panel import PersistPanel, TodoPanel, plan_of
from bot.sessions.model import LiveMessage, PanelRef

log = logging.getLogger(__name__)

THINKING = "thinking…"
THINKING_FOOTER = "_thinking…_"
WORKING = "_Working…_"
"""What a run's reply (or its control message) shows until there is text."""
WORKING_AFTER = 1.0
"""Seconds into a run before "Working…" and the Stop button show, when nothing else does: a
quick answer's first words come as a post of their own."""
SILENT_TOOLS = frozenset({"todo_write"})
"""Tools whose work shows elsewhere (the todo panel) and need no footer."""
OnCard = Callable[[ApprovalRequest, str], Awaitable[None]]
"""Told of each approval card posted: the request and the card's message id."""
OnTool = Callable[[ToolFinished], Awaitable[bool]]
"""Told of each call of a tool with side effects that ran: True when its card shows what it did
(otherwise the reply shows it in a line)."""


class Presenter:
    def __init__(
        self,
        surface: Surface,
        clock: Clock,
        budgets: BudgetRegistry,
        panel: PanelRef | None,
        persist_panel: PersistPanel,
        on_live: OnLive | None = None,
        on_card: OnCard | None = None,
        stop_button: Button | None = None,
        on_tool: OnTool | None = None,
        file_after: int | None = None,
    ) -> None:
        self._surface = surface
        self._file_after = file_after
        """Past this many characters, the rest of a reply goes to a file (:mod:`.overflow`)."""
        self._clock = clock
        self._on_card = on_card
        self._on_tool = on_tool
        self._budgets = budgets
        self._on_live = on_live
        self._stop_button = stop_button
        self._native: NativeReply | None = None
        self._working: asyncio.Task[None] | None = None
        self._working_shown = False
        self._control: ReplyStream | None = None
        """Beside a native stream: the message with the Stop button."""
        self._reply = self._new_reply()
        self._cards = asyncio.Lock()
        self._panel = TodoPanel(
            surface, panel, persist_panel, clock=clock, budget=budgets.get(surface.limits)
        )
        self._status_wanted: str | None = None
        self._status_sent: str | None = None
        self._status_task: asyncio.Task[None] | None = None
        self._closed = False
        self._paragraph = False
        """A new model call began: its text starts a new paragraph."""
        self._footer_thinking = False
        """The reply's footer says the model is thinking (its next text takes it away)."""
        self._shown: list[str] = []
        """The messages of the replies done so far (not cards, the panel or drafts)."""
        self._sign_in_cards: dict[str, str] = {}
        """The sign-in cards posted, by wait id: a wait that ends edits its card."""

    @property
    def shown(self) -> tuple[str, ...]:
        """The messages that hold what the run wrote, first to last (its replies; once closed,
        all of them)."""
        return (*self._shown, *self._reply.message_ids)

    def _edits(self, *, spare: bool = False) -> ReplyStream:
        """A reply edited in place; ``spare``: a control message, posted only when no reply
        waits to post in its channel."""
        surface, sweeper = self._surface, self._budgets.sweeper
        return ReplyStream(
            surface,
            self._clock,
            self._budgets.get(surface.limits),
            self._on_live,
            lambda draft: sweeper.discard(surface, draft),
            self._budgets.posts(surface.limits),
            spare=spare,
        )

    def _new_reply(self) -> ReplyStream | NativeReply:
        """A reply message (natively streamed where the surface can); an edited one shows the
        Stop button (and "Working…" while it has no text, once the run's first second passed)."""
        edits = self._edits()
        self._overflow = Overflow(self._file_after, file_transfer(self._surface))
        streams = native_streams(self._surface)
        if streams is not None:
            self._native = NativeReply(
                self._surface, streams, self._clock, self._budgets, edits, self._stream_live
            )
            return self._native
        if self._stop_button is not None:
            edits.set_buttons((self._stop_button,))
            if self._working_shown:
                edits.set_placeholder(WORKING)
        return edits

    async def _stream_live(self, message_id: str, live: LiveMessage | None) -> None:
        """A native stream started (or ended); its control message shows from the run's first
        second (a quicker answer costs no post for it)."""
        if self._on_live is not None:
            await self._on_live(message_id, live)

    def _arm_working(self) -> None:
        """From the run's first event: "Working…" and Stop show after :data:`WORKING_AFTER`."""
        if self._stop_button is not None and self._working is None and not self._closed:
            self._working = asyncio.get_running_loop().create_task(self._working_soon())

    async def _working_soon(self) -> None:
        await self._clock.sleep(WORKING_AFTER)
        self._show_working()

    def _show_working(self) -> None:
        if self._working_shown or self._closed or self._stop_button is None:
            return
        self._working_shown = True
        if self._native is None:
            if not self._reply.finished and isinstance(self._reply, ReplyStream):
                self._reply.set_placeholder(WORKING)
            return
        if not self._native.streaming:  # edited after all: Stop rides on the reply itself
            self._native.set_buttons((self._stop_button,))
            return
        self._control = self._edits(spare=True)
        self._control.set_buttons((self._stop_button,))
        self._control.set_placeholder(WORKING)

    async def __call__(self, event: EngineEvent) -> None:
        self._arm_working()
        if isinstance(
            event, ApprovalNeeded | CallAllowed | FormNeeded | SignInNeeded | SignInEnded
        ):  # whatever the reply's state
            await self._shown_apart(event)
            return
        if self._reply.finished and not isinstance(event, Finished | Failed):
            log.warning("event after the reply finished: %r", event)
            return
        match event:
            case TextDelta(text):
                self._write(text)
            case ModelCallStarted() | Thinking():
                await self._model_call(event)
            case ToolStarted() | ToolProgress() if event.name not in SILENT_TOOLS:
                self._tool_started(event)
            case ToolFinished(name=name) if name not in SILENT_TOOLS:
                await self._tool_finished(event)
            case TodosChanged(todos):
                if self._native is not None:
                    self._native.set_plan(*plan_of(todos))
                await self._panel.update(todos)
            case Notice(text) if not self._overflow.note(text):
                self._paragraph = True
                self._write(f"_{text}_")
                self._paragraph = True
            case Finished():
                await self._end("")
            case Failed(message):
                gap = "\n\n" if self._reply.has_text else ""
                await self._end(f"{gap}⚠️ {message}")

    async def _model_call(self, event: ModelCallStarted | Thinking) -> None:
        if isinstance(event, Thinking):
            self._thinking()
            return
        if event.after_messages and self._reply.has_text:
            await self._below()  # the answer to messages written meanwhile goes under them
        self._paragraph = self._paragraph or event.round > 1
        self._status_while_silent(THINKING)

    def _thinking(self) -> None:
        """The model reasons: the status line says so, or a line under the reply once it has
        text (the next text takes it away). The reasoning itself is never shown."""
        if self._reply.has_text:
            self._reply.set_footer(THINKING_FOOTER)
            self._footer_thinking = True
        else:
            self._set_status(THINKING)

    def _tool_started(self, event: ToolStarted | ToolProgress) -> None:
        self._footer_thinking = False
        if isinstance(event, ToolProgress):
            self._progress(event)
            return
        self._reply.set_footer(f"_running `{event.name}`…_")
        self._task(event.call_id, event.name, "in_progress")
        self._status_while_silent(f"running {event.name}…")

    def _progress(self, event: ToolProgress) -> None:
        """A long call's activity: a line under the reply (shown even before any text)."""
        self._reply.set_footer(f"▸ `{event.name}` · {event.text}", alone=True)
        self._task(event.call_id, event.name, "in_progress", event.text)
        self._status_while_silent(f"{event.name}: {event.text}")

    async def _tool_finished(self, event: ToolFinished) -> None:
        self._reply.set_footer(None)
        status: TaskStatus = "error" if event.is_error else "complete"
        self._task(event.call_id, event.name, status, event.summary or None)
        self._status_while_silent(THINKING)
        if not event.side_effects:
            return
        on_card = self._on_tool is not None and await self._on_tool(event)
        # a native stream shows it as a task card; a tool's error is the model's to explain
        if not on_card and self._native is None and not event.is_error:
            self._paragraph = True
            self._write(ran_line(event))
            self._paragraph = True

    def _task(
        self, call_id: str, name: str, status: TaskStatus, details: str | None = None
    ) -> None:
        """A tool call as a task card in a natively streamed reply."""
        if self._native is not None:
            self._native.set_task(StreamTask(f"call-{call_id}", f"`{name}`", status, details))

    async def _card(self, request: ApprovalRequest, *, inline: bool) -> None:
        """The reply so far lands first, then the card below it; when the run goes on while
        the card waits (``inline``), what it writes next goes to a new reply below the card."""
        async with self._cards:
            await self._end("")
            message_id = await post_card(self._surface, self._clock, request)
            request.card_id = message_id
            if self._on_card is not None:
                await self._on_card(request, message_id)
            if inline:
                await self._below(landed=True)

    async def _shown_apart(
        self, event: ApprovalNeeded | CallAllowed | FormNeeded | SignInNeeded | SignInEnded
    ) -> None:
        match event:
            case ApprovalNeeded(request, inline):
                await self._card(request, inline=inline)
            case CallAllowed():
                await self._allowed(event)
            case FormNeeded(form):
                async with self._cards:  # below the reply so far; the reply goes on below it
                    await self._end("")
                    form.card_id = await post_form_card(self._surface, self._clock, form)
                    await self._form_live(form)
                    if form.on_card is not None:
                        await form.on_card(form.card_id)
                    await self._below(landed=True)
            case SignInNeeded():
                await self._sign_in(event)
            case SignInEnded():
                await self._sign_in_ended(event)

    async def _sign_in(self, event: SignInNeeded) -> None:
        """The sign-in link goes to its person alone: as a private note where the platform can
        show one (Slack's ephemeral messages); elsewhere (or when the note is refused) the
        thread gets a card without the link, whose "Sign in…" shows it to the person alone.
        The link signs in whoever opens it, as the person it was made for: it is never posted
        where others see it."""
        surface = self._surface
        if isinstance(surface, PrivateNotes) and await surface.tell(
            event.person_id, note_text(event)
        ):
            return
        async with self._cards:
            await self._end("")
            if event.wait_id:
                card = await surface.post(surface.render(card_text(event)), card_buttons(event))
                self._sign_in_cards[event.wait_id] = card
            else:
                await surface.post(surface.render(unkept_text(event)))
            await self._below(landed=True)

    async def _sign_in_ended(self, event: SignInEnded) -> None:
        """The wait's card says how it ended, without its button (best effort: a click on a
        card left as it was says the wait is over)."""
        card = self._sign_in_cards.pop(event.wait_id, None)
        if card is None:
            return
        surface = self._surface
        try:
            await surface.edit(card, surface.render(ended_text(event)), (), final=True)
        except SurfaceError:
            log.warning("could not close the sign-in card %s", card, exc_info=True)

    async def _form_live(self, form: PendingForm) -> None:
        """A restart that cuts the wait off finds the card and closes it (its buttons go)."""
        on_live, card = self._on_live, form.card_id
        if on_live is None or card is None:
            return
        closed = self._surface.render(form_text(replace(form, status=FormStatus.STOPPED)))
        await on_live(card, LiveMessage(card, closed))

        async def forget() -> None:
            await on_live(card, None)

        form.on_closed = forget

    async def _allowed(self, event: CallAllowed) -> None:
        """A call a rule lets run is shown in full, below the reply so far, before it runs;
        what the run writes next goes to a new reply below it."""
        async with self._cards:
            await self._end("")
            await post_allowed(self._surface, self._clock, event)
            await self._below(landed=True)

    async def _below(self, *, landed: bool = False) -> None:
        """What the run writes next goes to a new reply, below what the thread shows now (a
        card, messages people wrote meanwhile); the reply so far lands first (if not already)."""
        if not landed:
            await self._end("")
        done, self._reply = self._reply, self._new_reply()
        self._paragraph = False
        await done.aclose()
        self._shown.extend(done.message_ids)

    async def close(self) -> None:
        """Land everything and stop the tasks; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        await self._stop_working()
        try:
            await self._end("")
        finally:
            try:
                if self._control is not None:
                    await self._control.finish()  # the control message goes with the run
            finally:
                await self._reply.aclose()
                if self._control is not None:
                    await self._control.aclose()
                await self._panel.aclose()
                await self._stop_status()

    async def _stop_working(self) -> None:
        task, self._working = self._working, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _write(self, text: str) -> None:
        if not text:
            return
        if self._footer_thinking:
            self._footer_thinking = False
            self._reply.set_footer(None)
        self._reply.append(self._overflow.take(self._separator() + text))
        self._paragraph = False
        if self._reply.has_text:
            self._set_status(None)

    def _separator(self) -> str:
        """A blank line between segments, when there is text to separate from."""
        reply = self._reply
        if not self._paragraph or not reply.has_text or reply.ends_with("\n\n"):
            return ""
        return "\n" if reply.ends_with("\n") else "\n\n"

    async def _end(self, suffix: str) -> None:
        try:
            await self._reply.finish(self._overflow.ending() + suffix)
            await self._rest()
            await self._panel.flush()
        finally:
            self._set_status(None)
            if self._status_task is not None:
                await asyncio.shield(self._status_task)

    async def _rest(self) -> None:
        """The rest of a huge reply, as a file below it (or a line saying why not)."""
        refused = await self._overflow.post_rest()
        if refused is not None:
            try:
                await self._surface.post(refused)
            except SurfaceError:
                log.warning("could not say that the rest of an answer was not posted")

    def _status_while_silent(self, text: str) -> None:
        """Before any text shows, the status line says what is going on."""
        if not self._reply.has_text:
            self._set_status(text)

    def _set_status(self, text: str | None) -> None:
        """Show ``text`` in the status line soon, without holding up the run."""
        self._status_wanted = text
        if self._status_sent != text and (self._status_task is None or self._status_task.done()):
            self._status_task = asyncio.get_running_loop().create_task(self._send_status())

    async def _send_status(self) -> None:
        """The status line is a courtesy: a platform failure there changes nothing else."""
        while self._status_sent != self._status_wanted:
            text = self._status_wanted
            try:
                await self._surface.set_status(text)
            except SurfaceError:
                log.info("could not set the status line", exc_info=True)
            self._status_sent = text

    async def _stop_status(self) -> None:
        task, self._status_task = self._status_task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
