"""Discord's events → the core: messages, clicks, slash commands and message commands (the
shortcuts of :mod:`bot.api.shortcuts`), each in an owned task.

Nothing here waits for the core inside a platform's deadline: a message is handed to the core
in a background task; a click, a slash command or a message command is acknowledged first
(Discord wants an answer within 3 s), then handled in a background task whose result comes
back as an ephemeral follow-up (with a confirm button for a reset).

Which messages are answered:
- Messages from bots (this one included) and webhooks, and system messages, are ignored.
- Direct messages are always answered (``discord:dm:{channel}``).
- In a thread: a message that mentions the bot is answered; any other readable message is
  handed to the core as not addressed to the bot, and the core decides (whether the thread is
  the bot's, and whether it answers it or only keeps it: ``thread_replies``, a quiet thread).
- In a text channel: a mention opens a thread from the message and is answered there. A
  redelivered mention finds that thread (its id is the message's) instead of a second one.
Messages of one channel are routed one at a time, in arrival order.
- An edit (``MESSAGE_UPDATE`` of a person's message that Discord says was edited) is handed to
  the core as an edit of that message, in its thread; it never opens one.

After a new gateway session (not a RESUME), what was posted while the bot could not see is
caught up (:mod:`adapters.discord.catchup`) and routed the same way, before anything newer in
the same thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import discord

from adapters.discord.catchup import CatchUp
from adapters.discord.feedback import ask_why
from adapters.discord.forms import TypedForms, open_form
from adapters.discord.identity import author_of, parse_key, thread_key
from adapters.discord.parse import (
    Where,
    clean_text,
    edit_inbound,
    from_a_person,
    mentions_me,
    thread_name,
    to_inbound,
)
from adapters.discord.ratelimit import GlobalPacer, RateLimitWatch
from adapters.discord.surface import NO_PINGS, DiscordSurface, Link
from adapters.discord.views import build_view
from bot.api.actions import explain_after, form_to_open
from bot.api.commands import Command, run_command
from bot.api.forms import FormReply, PendingForm
from bot.api.inbound import Earlier, Gap, ThreadKey
from bot.api.kit import Clock, TaskSet, ThreadLocks
from bot.api.port import CoreApi
from bot.api.shortcuts import Note, Shortcut
from bot.api.surface import Button
from bot.errors import SurfaceError

log = logging.getLogger(__name__)

FAILED = "⚠️ Something went wrong while answering; the server log has the details."
CLICK_FAILED = "Something went wrong with that button; the server log has the details."
COMMAND_FAILED = "Something went wrong; the server log has the details."
NO_THREAD = "I can't open a thread here: I need the Create Public Threads and Send Messages in Threads permissions."
THREAD_EXISTS = 160004
HISTORY_PAGE = 100
"""The most messages one history request gives."""


class Listeners:
    def __init__(self, core: CoreApi, clock: Clock, history_messages: int = 50) -> None:
        self.core = core
        self.history_messages = history_messages
        """First mentioned in an existing thread: how many earlier messages to read."""
        self.clock = clock
        self.watch = RateLimitWatch(clock)
        self.pacer = GlobalPacer(clock)
        self.client: discord.Client | None = None
        self.ready = asyncio.Event()
        self.tasks = TaskSet("the Discord adapter")
        self.catch_up = CatchUp(clock, self.pacer)
        self.skipped: Counter[str] = Counter()
        """Gateway events skipped because discord.py could not read them, by event name."""
        self._order: ThreadLocks[int] = ThreadLocks()
        self.typed_forms = TypedForms(clock)
        """What people typed in the forms they fill in (the pages of a long form)."""

    @property
    def me(self) -> discord.ClientUser | None:
        return None if self.client is None else self.client.user

    @property
    def clicks(self) -> Listeners:
        return self

    async def idle(self) -> None:
        """Return once no message, click or command is being handled."""
        await self.tasks.idle()

    # --- surfaces -----------------------------------------------------------------------------
    def surface(self, channel_id: int, guild_id: int | None) -> DiscordSurface:
        if self.client is None:
            raise RuntimeError("the Discord client is not logged in")
        link = Link(self.client, self.watch, self.pacer, self.clock)
        return DiscordSurface(link, channel_id, thread_key(guild_id, channel_id), guild_id=guild_id)

    def surface_for_key(self, key: ThreadKey) -> DiscordSurface:
        """The surface of a thread the core reaches on its own (a resumed run, an expiry)."""
        where = parse_key(key)
        if where is None:
            raise SurfaceError(f"{key} is not a Discord thread")
        if self.client is None:
            raise SurfaceError("Discord is not connected")
        return self.surface(where[1], where[0])

    # --- messages -----------------------------------------------------------------------------
    def on_message(self, message: discord.Message) -> None:
        self.catch_up.seen(message.id)
        self.tasks.spawn(self.route(message))

    def on_edit(self, message: discord.Message) -> None:
        self.tasks.spawn(self.route_edit(message))

    async def route_edit(self, message: discord.Message) -> None:
        """Hand a person's edit of ``message`` to the core (in order with the channel's
        messages); the core decides whether it changes anything."""
        me = self.me
        if me is None or not from_a_person(message):
            return
        async with self._order.hold(message.channel.id):
            where = await self._edited_where(message)
            inbound = None if where is None else edit_inbound(message, where, me)
            if where is None or inbound is None:
                return
            surface = self.surface(where.channel_id, where.guild_id)
            try:
                work = await self.core.admit(inbound, surface)
            except Exception:
                log.exception("the edit of discord:%s in %s failed", message.id, surface.thread_key)
                await surface.aclose()
                return
            self.tasks.spawn(self._answer(work, surface, message.id))

    async def _edited_where(self, message: discord.Message) -> Where | None:
        """The thread of an edited message: its own, or the one started from it."""
        if message.guild is None:
            return Where(message.channel.id, None)
        channel = await self._resolve(message.channel)
        if isinstance(channel, discord.Thread):
            return Where(channel.id, message.guild.id)
        if isinstance(channel, discord.TextChannel):  # a thread started from it has its id
            return Where(message.id, message.guild.id)
        return None

    async def route(self, message: discord.Message) -> bool:
        """Hand ``message`` to the core when it is for the bot (in arrival order per channel);
        True when that started an answer."""
        me = self.me
        if me is None or not from_a_person(message):
            return False
        async with self._order.hold(message.channel.id):
            if self.catch_up.pending and message.guild is not None:
                await self._catch_up_before(message, me)
            return await self._admit(message, me)

    async def _admit(self, message: discord.Message, me: discord.ClientUser) -> bool:
        """Take the message's place in its thread (before the next message of the channel is
        routed); the answer comes in an owned task. True when the core started one (not for a
        message it has seen, nor for one it hands to the reply under way)."""
        where = await self._where(message, me)
        if where is None:
            return False
        surface = self.surface(where.channel_id, where.guild_id)
        inbound = to_inbound(message, where, me)
        if (
            where.channel_id == message.channel.id
            and where.guild_id is not None
            and mentions_me(message, me)
        ):
            inbound = replace(inbound, history=await self._earlier(message, inbound.thread_key, me))
        try:
            work = await self.core.admit(inbound, surface)
        except Exception:
            log.exception("answering discord:%s in %s failed", message.id, surface.thread_key)
            self.tasks.spawn(_say_failed(surface))
            return False
        self.tasks.spawn(self._answer(work, surface, message.id))
        return work is not None

    async def _earlier(
        self, message: discord.Message, key: ThreadKey, me: discord.ClientUser
    ) -> tuple[Earlier | Gap, ...]:
        """A first mention inside a thread that existed before: what was said there before it
        (one page of history, at most ``history_messages``), the bot's own words left out. One
        message more is asked for: when it comes, the thread goes back further than was read
        (a :class:`Gap` says so; Discord does not say by how many)."""
        if self.history_messages <= 0 or await self.core.has_session(key):
            return ()
        want = min(self.history_messages, HISTORY_PAGE - 1)
        await self.pacer.acquire()
        try:
            found = [m async for m in message.channel.history(limit=want + 1, before=message)]
        except discord.HTTPException as exc:
            log.warning(
                "could not read the earlier messages of %s: %s %s", key, exc.status, exc.text
            )
            return ()
        said = ((m, clean_text(m, me)) for m in reversed(found[:want]) if m.author.id != me.id)
        read = tuple(
            Earlier(m.author.display_name + (" (an app)" if m.author.bot else ""), t)
            for m, t in said
            if t
        )
        return (Gap(None), *read) if len(found) > want else read

    # --- catching up after a new session ------------------------------------------------------
    def on_guild_available(self, guild: discord.Guild) -> None:
        if self.catch_up.pending and self.me is not None:
            self.tasks.spawn(self.catch_up.guild_pass(guild, self.me, self))

    def on_ready(self) -> None:
        self.ready.set()
        self.tasks.spawn(self.catch_up.finish())

    async def has_session(self, guild_id: int, thread_id: int) -> bool:
        return await self.core.has_session(thread_key(guild_id, thread_id))

    async def catch_up_thread(self, thread: discord.Thread, me: discord.ClientUser) -> None:
        async with self._order.hold(thread.id):
            await self._catch_up_held(thread, me, None)

    async def _catch_up_before(self, message: discord.Message, me: discord.ClientUser) -> None:
        """The first message of a thread since a new session: first what came before it."""
        if isinstance(message.channel, discord.TextChannel):
            return
        thread = await self._resolve(message.channel)
        if isinstance(thread, discord.Thread):
            await self._catch_up_held(thread, me, message)

    async def _catch_up_held(
        self, thread: discord.Thread, me: discord.ClientUser, before: discord.Message | None
    ) -> None:
        """Route what the thread shows after the bot's last word (the thread's order is held)."""
        if not self.catch_up.take(thread.id) or not await self.has_session(
            thread.guild.id, thread.id
        ):
            return
        for message in await self.catch_up.unanswered(thread, me, before=before):
            self.catch_up.tally.started += await self._admit(message, me)

    async def _answer(
        self, work: Awaitable[None] | None, surface: DiscordSurface, message_id: int
    ) -> None:
        try:
            if work is not None:
                await work
        except Exception:
            log.exception("answering discord:%s in %s failed", message_id, surface.thread_key)
            await _say_failed(surface)
        finally:
            await surface.aclose()

    async def _where(self, message: discord.Message, me: discord.abc.User) -> Where | None:
        guild = message.guild
        if guild is None:
            return Where(message.channel.id, None)
        mentioned = mentions_me(message, me)
        channel = await self._resolve(message.channel)
        if isinstance(channel, discord.Thread):
            if mentioned:
                return Where(channel.id, guild.id)
            readable = bool(message.content.strip() or message.attachments)
            return Where(channel.id, guild.id) if readable else None
        if isinstance(channel, discord.TextChannel) and mentioned:
            thread_id = await self._open_thread(message, thread_name(message, me))
            return None if thread_id is None else Where(thread_id, guild.id)
        return None

    async def _resolve(self, channel: object) -> object:
        """The channel, fetched when discord.py has not cached it (a thread it never saw)."""
        if not isinstance(channel, discord.PartialMessageable):
            return channel
        if self.client is None:
            raise RuntimeError("the Discord client is not logged in")
        try:
            return await self.client.fetch_channel(channel.id)
        except discord.HTTPException as exc:
            log.warning("could not look up channel %s: %s %s", channel.id, exc.status, exc.text)
            return None

    async def _open_thread(self, message: discord.Message, name: str) -> int | None:
        """The thread started from ``message``: created now, or the one already there."""
        guild = message.guild
        if guild is not None and guild.get_thread(message.id) is not None:
            return message.id
        try:
            await self.pacer.acquire()
            thread = await message.create_thread(name=name, auto_archive_duration=1440)
        except discord.HTTPException as exc:
            if exc.code == THREAD_EXISTS:
                return message.id  # a thread started from a message has the message's id
            log.warning(
                "could not open a thread from message %s: %s %s", message.id, exc.status, exc.text
            )
            if exc.status == 403:
                await _say_no_thread(message)
            return None
        return thread.id

    # --- clicks and commands ------------------------------------------------------------------
    async def on_click(self, interaction: discord.Interaction[Any], action_id: str) -> None:
        form = explain_after(action_id)  # a 👎: the modal is the click's one response
        if form is not None and await ask_why(interaction, form, self.core.explain):
            self.tasks.spawn(self._click(interaction, action_id))
            return
        if await self._form(interaction, action_id):
            return
        try:
            await interaction.response.defer()  # acknowledged: the message stays as it is
        except discord.HTTPException as exc:
            log.warning(
                "could not acknowledge a click on %r: %s %s", action_id, exc.status, exc.text
            )
            return
        self.tasks.spawn(self._click(interaction, action_id))

    async def _form(self, interaction: discord.Interaction[Any], action_id: str) -> bool:
        """A form's "Fill in…" by its person: answered with the form's modal."""
        form_id = form_to_open(action_id)
        if form_id is None or interaction.channel_id is None:
            return False
        actor = author_of(interaction.user)
        opened = await self.core.open_form(form_id, actor)
        if not isinstance(opened, PendingForm):
            return False  # the click says why
        channel, guild = interaction.channel_id, interaction.guild_id

        async def send(values: Mapping[str, Any]) -> FormReply:
            surface = self.surface(channel, guild)
            try:
                return await self.core.answer_form(form_id, actor, values, surface)
            finally:
                await surface.aclose()

        return await open_form(interaction, opened, send, self.typed_forms)

    async def _click(self, interaction: discord.Interaction[Any], action_id: str) -> None:
        clicked = str(interaction.message.id) if interaction.message is not None else None
        actor = author_of(interaction.user)
        await self._privately(
            interaction,
            f"the click on {action_id!r}",
            CLICK_FAILED,
            lambda surface: self.core.on_action(action_id, actor, surface, clicked),
        )

    async def on_command(self, interaction: discord.Interaction[Any], command: Command) -> None:
        try:
            await interaction.response.defer(ephemeral=True, thinking=True)
        except discord.HTTPException as exc:
            log.warning(
                "could not acknowledge /threadline %s: %s %s", command, exc.status, exc.text
            )
            return
        self.tasks.spawn(self._command(interaction, command))

    async def _command(self, interaction: discord.Interaction[Any], command: Command) -> None:
        actor = author_of(interaction.user)
        await self._privately(
            interaction,
            f"/threadline {command}",
            COMMAND_FAILED,
            lambda surface: run_command(self.core, command, surface.thread_key, surface, actor),
        )

    async def on_shortcut(
        self, interaction: discord.Interaction[Any], shortcut: Shortcut, message: discord.Message
    ) -> None:
        try:
            await interaction.response.defer(ephemeral=True, thinking=True)
        except discord.HTTPException as exc:
            log.warning(
                "could not acknowledge the %s shortcut: %s %s", shortcut, exc.status, exc.text
            )
            return
        self.tasks.spawn(self._shortcut(interaction, shortcut, message))

    async def _shortcut(
        self, interaction: discord.Interaction[Any], shortcut: Shortcut, message: discord.Message
    ) -> None:
        """The shortcut in the thread of ``message`` (a thread's starter message in its channel
        names that thread); its note goes to the person alone."""
        channel_id = interaction.channel_id or message.channel.id
        guild_id = interaction.guild_id
        if _starts_a_thread(message):
            channel_id = message.id  # the thread started from this message has its id
        surface = self.surface(channel_id, guild_id)
        actor = author_of(interaction.user)
        try:
            note = await self.core.on_shortcut(shortcut, surface.thread_key, actor, surface)
        except Exception:
            log.exception("the %s shortcut in %s failed", shortcut, surface.thread_key)
            note = Note(COMMAND_FAILED)
        finally:
            await surface.aclose()
        await _follow_up(interaction, note.text, note.buttons)

    async def _privately(
        self,
        interaction: discord.Interaction[Any],
        what: str,
        failed: str,
        work: Callable[[DiscordSurface], Awaitable[str | None]],
    ) -> None:
        """Do ``work`` in the interaction's thread; its note goes to the person alone."""
        if interaction.channel_id is None:
            log.warning("%s came without a channel", what)
            await _follow_up(interaction, failed)
            return
        surface = self.surface(interaction.channel_id, interaction.guild_id)
        try:
            note = await work(surface)
        except Exception:
            log.exception("%s in %s failed", what, surface.thread_key)
            note = failed
        finally:
            await surface.aclose()
        if note:
            await _follow_up(interaction, note)


def _starts_a_thread(message: discord.Message) -> bool:
    """A server message in a channel that a thread was started from (the thread's id is its)."""
    guild = message.guild
    if guild is None or isinstance(message.channel, discord.Thread):
        return False
    return guild.get_thread(message.id) is not None or message.thread is not None


async def _say_failed(surface: DiscordSurface) -> None:
    try:
        await surface.post(FAILED)
    except SurfaceError:
        log.warning("could not tell %s that answering failed", surface.thread_key)
    finally:
        await surface.aclose()


async def _say_no_thread(message: discord.Message) -> None:
    try:
        await message.channel.send(NO_THREAD, allowed_mentions=NO_PINGS)
    except discord.HTTPException:
        log.warning("could not tell channel %s that threads are not allowed", message.channel.id)


async def _follow_up(
    interaction: discord.Interaction[Any], note: str, buttons: Sequence[Button] = ()
) -> None:
    """A private answer to the person who clicked or typed the command (with ``buttons``)."""
    view = build_view(buttons)
    try:
        if view is None:
            await interaction.followup.send(note[:2000], ephemeral=True, allowed_mentions=NO_PINGS)
        else:
            await interaction.followup.send(
                note[:2000], ephemeral=True, allowed_mentions=NO_PINGS, view=view
            )
    except discord.HTTPException as exc:
        log.warning("could not send the private note: %s %s", exc.status, exc.text)
