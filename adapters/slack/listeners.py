"""Bolt listeners: acknowledge at once, then translate and call the core in an owned task.

A listener only parses the payload and starts a task, so Slack always gets its
acknowledgement well within 3 seconds, however busy the core is. The task resolves the
speaker's name and hands an :class:`~bot.api.inbound.Inbound` to the core, saying whether it
mentions the bot (the core decides whether a thread is the bot's, and whether a message that
does not mention it is answered). Messages of one thread are
prepared one at a time, in the order they arrived, and each takes its place in the core
(``core.admit``) before the next is prepared, so a slow name lookup cannot let a later message
overtake an earlier one. A click is acknowledged first, then routed to ``core.on_action``; its
note goes to the clicker alone with ``chat.postEphemeral``. A ``/threadline`` command is
acknowledged first too, then answered to the person alone (:mod:`adapters.slack.commands`).
A message shortcut (``threadline_stop``…, :mod:`bot.api.shortcuts`) is acknowledged first,
then handed to ``core.on_shortcut``; its note (with a confirm button for reset) goes to the
person alone, in the thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from slack_bolt.context.ack.async_ack import AsyncAck

from adapters.slack.api import Identity, SlackApi
from adapters.slack.assistant import AssistantThreads
from adapters.slack.blocks import message_payload
from adapters.slack.commands import SlashCommand, read_payload, respond, target
from adapters.slack.early import EarlyReplies
from adapters.slack.feedback import Submission, modal, open_modal, read_submission
from adapters.slack.forms import FormSent, errors_answer, form_modal, read_form
from adapters.slack.history import earlier
from adapters.slack.parse import (
    Click,
    PersonMessage,
    ShortcutUse,
    mentioned_users,
    parse_click,
    parse_edit,
    parse_message,
    parse_shortcut,
    plain_text,
    posted_at,
    thread_key,
)
from adapters.slack.people import DisplayNames, UserGroups
from adapters.slack.render import render
from adapters.slack.streams import StreamSupport
from adapters.slack.surface import SlackSurface, StatusSupport
from bot.api.actions import explain_after, form_to_open
from bot.api.commands import run_command
from bot.api.forms import FormReply
from bot.api.inbound import Author, Earlier, Gap, Inbound, ThreadKey
from bot.api.kit import Clock, SystemClock, TaskSet, ThreadLocks
from bot.api.port import CoreApi
from bot.api.shortcuts import Note, read
from bot.api.surface import SurfaceLimits
from bot.errors import SurfaceError

log = logging.getLogger(__name__)
FORM_ANSWER_S = 2.5
"""How long a sent form is checked before Slack is answered (it waits 3 s)."""

T = TypeVar("T")
LOOKUP_BUDGET_S = 1.0
"""How long a name or group lookup may hold up accepting a message (Slack wants its
acknowledgement within 3 s)."""
FAILED = "Something went wrong while answering; the server log has the details."
CLICK_FAILED = "Something went wrong with that button; the server log has the details."
COMMAND_FAILED = "Something went wrong; the server log has the details."
UNKNOWN_SHORTCUT = "I don't know that shortcut; the app's shortcuts may be newer than this bot."


@dataclass(eq=False)
class SlackListeners:
    core: CoreApi
    api: SlackApi
    identity: Identity
    names: DisplayNames
    groups: UserGroups
    limits: SurfaceLimits
    tasks: TaskSet
    history_messages: int = 50
    """First mentioned in an existing thread: how many earlier messages to read."""
    streams: StreamSupport | None = None
    clock: Clock = field(default_factory=SystemClock)
    assistant: AssistantThreads | None = None
    """Slack's assistant threads: a thread's first question titles it."""
    _early: EarlyReplies = field(default_factory=EarlyReplies, init=False)
    _status: StatusSupport = field(default_factory=StatusSupport, init=False)
    _order: ThreadLocks[ThreadKey] = field(default_factory=ThreadLocks, init=False)

    def surface(self, key: ThreadKey) -> SlackSurface:
        return SlackSurface(
            self.api,
            key,
            self.limits,
            self._status,
            self.streams,
            (self.identity, self.names),
            groups=self.groups,
        )

    # --- Bolt listeners (each returns within Slack's 3 s) ------------------------------------
    async def on_message(self, event: dict[str, Any]) -> None:
        """``message`` and ``app_mention`` events: the message is accepted (stored, with its
        delivery id) before this returns and Bolt acknowledges it; the answer comes in an owned
        task. A person's edit (``message_changed``) is accepted the same way."""
        bot = self.identity.bot_user_id
        message = parse_message(event, bot) or parse_edit(event, bot)
        if message is None:
            return
        try:
            await self._accept(message)
        except Exception:  # the event stays unacknowledged-safe: Slack retries it, deduplicated
            log.exception("could not accept a message in %s", message.channel)
            raise

    async def on_other_event(self) -> None:
        """Any other event: acknowledged, nothing to do."""

    async def on_action(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        click = parse_click(body)
        if click is None:
            log.info("ignoring an interaction that is not a button click")
            return
        self.tasks.spawn(self._click(click))

    async def on_command(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        command = read_payload(body)
        if command is None:
            log.info("ignoring a slash command payload without a user and a channel")
            return
        self.tasks.spawn(self._command(command))

    async def on_shortcut(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        use = parse_shortcut(body)
        if use is None:
            log.info("ignoring a shortcut payload without a user, a channel and a message")
            return
        self.tasks.spawn(self._shortcut(use))

    # --- the work ----------------------------------------------------------------------------
    async def _accept(self, message: PersonMessage) -> None:
        """Messages of one thread one at a time; a reply in a thread the bot has not joined is
        kept a while (:mod:`adapters.slack.early`), and answered right after the message that
        joins the bot to the thread."""
        key = message.thread_key(self.identity.team_id)
        async with self._order.hold(key):
            if (
                message.needs_session
                and message.edited is None
                and not await self.core.has_session(key)
            ):
                self._early.keep(key, message, self.clock.now())
                return
            await self._admit(message, key)
            if not message.needs_session:
                for reply in self._early.after(key, message.ts, self.clock.now()):
                    await self._admit(reply, key)

    async def _admit(self, message: PersonMessage, key: ThreadKey) -> None:
        """The message's place in its thread (the thread's order is held)."""
        inbound = await self._inbound(message, key)
        if self.streams is not None:  # a native stream of the answer is for this person
            self.streams.answering(key, message.user)
        surface = self.surface(key)
        titled = self.assistant is not None and self.assistant.may_title(
            message.direct, message.ts != message.root_ts
        )
        first = titled and not await self.core.has_session(key)
        try:  # its place in the thread is taken before the next message is prepared
            work = await self.core.admit(inbound, surface)
        except Exception:
            log.exception("answering %s in %s failed", inbound.event_id, key)
            self.tasks.spawn(_say_failed(surface))
            return
        if first and work is not None and self.assistant is not None:
            self.assistant.title(message.channel, message.root_ts, inbound.text)
        if work is not None:
            self.tasks.spawn(self._handle(inbound, work, surface))

    async def _inbound(self, message: PersonMessage, key: ThreadKey) -> Inbound:
        """Names and groups are looked up within a bound (the message must be stored before
        Slack's 3 s are up); one that is slower is shown by its id, and kept for next time."""
        mentioned = sorted(mentioned_users(message.text))
        history_read = asyncio.ensure_future(_within(self._earlier(message, key), ()))
        name, roles = await asyncio.gather(
            _within(self.names.name(message.user), message.user),
            _within(self.groups.roles_of(message.user), frozenset[str]()),
        )
        found = await asyncio.gather(*(_within(self.names.name(u), u) for u in mentioned))
        names = dict(zip(mentioned, found, strict=True))
        history: tuple[Earlier | Gap, ...] = await history_read
        return Inbound(
            thread_key=key,
            author=Author(f"slack:{message.user}", name, roles),
            text=plain_text(message.text, names),
            event_id=message.event_id(self.identity.team_id),
            files=message.files,
            history=history,
            addressed=not message.needs_session,
            message_id=message.ts,
            posted_at=None if message.edited is None else posted_at(message.ts),
        )

    async def _earlier(self, message: PersonMessage, key: ThreadKey) -> tuple[Earlier | Gap, ...]:
        """A first mention inside a thread that existed before: what was said there."""
        if (
            message.needs_session
            or message.ts == message.root_ts
            or await self.core.has_session(key)
        ):
            return ()
        return await earlier(
            self.api,
            self.identity,
            self.names,
            message.channel,
            message.root_ts,
            message.ts,
            self.history_messages,
        )

    async def _handle(self, inbound: Inbound, work: Awaitable[None], surface: SlackSurface) -> None:
        try:
            await work
        except Exception:
            log.exception("answering %s in %s failed", inbound.event_id, inbound.thread_key)
            await _say_failed(surface)

    async def _click(self, click: Click) -> None:
        await self._ask_why(click)  # first: its trigger lasts 3 s
        await self._open_form(click)
        key = thread_key(self.identity.team_id, click.channel, click.root_ts)
        name, roles = await asyncio.gather(
            self.names.name(click.user), self.groups.roles_of(click.user)
        )
        actor = Author(f"slack:{click.user}", name, roles)
        try:
            note = await self.core.on_action(
                click.action_id, actor, self.surface(key), click.message_ts
            )
        except Exception:
            log.exception("the click on %r in %s failed", click.action_id, key)
            note = CLICK_FAILED
        if not note:
            return
        try:
            await self.api.ephemeral(
                click.channel, click.user, click.root_ts, message_payload(render(note))
            )
        except SurfaceError:
            log.warning("could not show %s the note about their click", click.user, exc_info=True)

    async def _shortcut(self, use: ShortcutUse) -> None:
        """The shortcut in the thread of the message it was used on; its note goes to the
        person alone, in that thread."""
        key = thread_key(self.identity.team_id, use.channel, use.root_ts)
        try:
            note = await self._shortcut_note(use, key)
        except Exception:
            log.exception("the shortcut %r in %s failed", use.callback_id, key)
            note = Note(COMMAND_FAILED)
        payload = message_payload(render(note.text), note.buttons)
        try:
            await self.api.ephemeral(use.channel, use.user, use.root_ts, payload)
        except SurfaceError:
            log.warning("could not answer the shortcut of %s in %s", use.user, key)

    async def _shortcut_note(self, use: ShortcutUse, key: ThreadKey) -> Note:
        shortcut = read(use.callback_id)
        if shortcut is None:
            log.info("unknown shortcut %r", use.callback_id)
            return Note(UNKNOWN_SHORTCUT)
        name, roles = await asyncio.gather(
            self.names.name(use.user), self.groups.roles_of(use.user)
        )
        actor = Author(f"slack:{use.user}", name, roles)
        return await self.core.on_shortcut(shortcut, key, actor, self.surface(key))

    async def _ask_why(self, click: Click) -> None:
        """A 👎: the one-line "what went wrong?" modal."""
        form = explain_after(click.action_id)
        if form is None or click.trigger_id is None:
            return
        try:
            await open_modal(self.api, click.trigger_id, modal(form, click.channel, click.root_ts))
        except SurfaceError:
            log.warning("could not ask %s what went wrong", click.user, exc_info=True)

    async def _open_form(self, click: Click) -> None:
        """A form's "Fill in…": its modal, for the person it is for (others get a note from
        the click itself)."""
        form_id = form_to_open(click.action_id)
        if form_id is None or click.trigger_id is None:
            return
        opened = await self.core.open_form(form_id, Author(f"slack:{click.user}", click.user))
        if isinstance(opened, str):
            return
        view = form_modal(opened, click.channel, click.root_ts)
        try:
            await open_modal(self.api, click.trigger_id, view)
        except SurfaceError:
            log.warning("could not open the form %s for %s", form_id, click.user, exc_info=True)

    async def on_view(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """A modal sent. An MCP server's form: checked before the answer to Slack (errors
        show beside the fields); the "what went wrong?" modal: closed at once, its answer to
        the person alone."""
        if (form := read_form(body)) is not None:
            await self._form_sent(ack, form)
            return
        await ack()
        sent = read_submission(body)
        if sent is None:
            log.info("ignoring a view submission that is not the feedback form")
            return
        self.tasks.spawn(self._explained(sent))

    async def _form_sent(self, ack: AsyncAck, sent: FormSent) -> None:
        key = thread_key(self.identity.team_id, sent.channel, sent.root_ts)
        actor = Author(f"slack:{sent.user}", await self.names.name(sent.user))
        answering = self.tasks.spawn(
            self.core.answer_form(sent.form_id, actor, sent.values, self.surface(key)),
            awaited=True,
        )
        if answering is None:  # shutting down
            await ack()
            return
        done, _ = await asyncio.wait({answering}, timeout=FORM_ANSWER_S)
        reply: FormReply | None = None
        if done and not answering.exception():
            reply = answering.result()
        if reply is not None and reply.errors:
            await ack(**errors_answer(dict(reply.errors)))
            return
        await ack()
        if reply is None and not done:  # slow: the note comes when it is sent
            with contextlib.suppress(Exception):
                reply = await answering
        if reply is None:
            log.warning("the form %s of %s failed", sent.form_id, sent.user)
        note = reply.note if reply is not None else COMMAND_FAILED
        try:
            await self.api.ephemeral(
                sent.channel, sent.user, sent.root_ts, message_payload(render(note))
            )
        except SurfaceError:
            log.warning("could not tell %s about their form", sent.user, exc_info=True)

    async def _explained(self, sent: Submission) -> None:
        name, roles = await asyncio.gather(
            self.names.name(sent.user), self.groups.roles_of(sent.user)
        )
        actor = Author(f"slack:{sent.user}", name, roles)
        try:
            note = await self.core.explain(sent.form_id, actor, sent.text)
        except Exception:
            log.exception("the feedback form of %s failed", sent.user)
            note = COMMAND_FAILED
        try:
            await self.api.ephemeral(
                sent.channel, sent.user, sent.root_ts, message_payload(render(note))
            )
        except SurfaceError:
            log.warning("could not answer %s about their feedback", sent.user, exc_info=True)

    async def _command(self, command: SlashCommand) -> None:
        """Run the command in the thread it names; its answer goes to the person alone."""
        try:
            note = await self._command_note(command)
        except Exception:
            log.exception("/threadline in %s failed", command.channel)
            note = COMMAND_FAILED
        session = self.api.client.session
        url = command.response_url
        if url is not None and session is not None and await respond(session, url, note):
            return
        try:
            await self.api.ephemeral(
                command.channel, command.user, None, message_payload(render(note))
            )
        except SurfaceError:
            log.warning("could not answer /threadline to %s in %s", command.user, command.channel)

    async def _command_note(self, command: SlashCommand) -> str:
        team = self.identity.team_id
        latest = await self.core.latest_thread(f"slack:{team}:{command.channel}:")
        found = target(command, latest)
        if found.command is None or found.key is None:
            return found.note
        name, roles = await asyncio.gather(
            self.names.name(command.user), self.groups.roles_of(command.user)
        )
        actor = Author(f"slack:{command.user}", name, roles)
        answer = await run_command(
            self.core, found.command, found.key, self.surface(found.key), actor
        )
        return found.note + answer


async def _within(lookup: Awaitable[T], fallback: T) -> T:
    """``lookup``'s answer, or ``fallback`` after ``LOOKUP_BUDGET_S`` (the lookup goes on and
    fills its cache)."""
    task = asyncio.ensure_future(lookup)
    try:
        return await asyncio.wait_for(asyncio.shield(task), LOOKUP_BUDGET_S)
    except TimeoutError:
        task.add_done_callback(_ignore)
        return fallback


def _ignore(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


async def _say_failed(surface: SlackSurface) -> None:
    try:
        await surface.post(render(FAILED))
    except SurfaceError:
        log.warning("could not tell %s that answering failed", surface.thread_key)
