"""Catching up after a new gateway session: what people wrote while the bot could not see.

Discord replays missed events only on a RESUME. After any other (re)connection — a new
session, including the first start after the bot was down — this module finds what was
posted meanwhile, and the listeners hand it to the core through the normal path; the core
answers each message once (its event id is ``discord:{message id}``), in order.

- **Threads.** For each of the guild's active threads (``GET /guilds/{id}/threads/active``)
  where the bot has a session: the recent history (at most :data:`HISTORY` messages), newest
  first, back to the bot's own latest message from before this session. People's messages
  after it are candidates, oldest first. The bot's messages posted after the horizon (a run
  picked up after a restart, a reply streamed while the gateway was away) do not count as
  an answer to what came before them.
- **Mentions in channels.** The recent messages of text channels the bot can read; each
  mention of the bot goes the normal way (a thread is opened from it, or found).
- **Order.** A thread's first message after a new session catches its thread up before it
  is handed on, under the thread's order (:meth:`CatchUp.take`), so nothing posted while the
  bot was away is answered after something posted since.

Bounds: :data:`THREADS_PER_GUILD` threads and :data:`CHANNELS_PER_GUILD` channels per guild,
the most recently active first, each read once, one request at a time through the global
pacer; messages older than :data:`MAX_AGE_S` are left alone (well within the two days the
core remembers answered event ids). After a reconnect within the process, a thread or
channel whose newest message the gateway had already shown is not read at all.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import discord

from adapters.discord.parse import from_a_person, mentions_me
from adapters.discord.ratelimit import GlobalPacer
from bot.api.kit import Clock

log = logging.getLogger(__name__)

HISTORY = 50
THREADS_PER_GUILD = 50
CHANNELS_PER_GUILD = 50
MAX_AGE_S = 24 * 3600.0
SEEN_MARGIN_MS = 5_000
"""Messages created this long before the newest one the gateway showed may still be in flight."""


class Deliver(Protocol):
    async def catch_up_thread(self, thread: discord.Thread, me: discord.ClientUser) -> None:
        """Catch ``thread`` up (if it is still due) under its order, then hand on what it finds."""
        ...

    async def route(self, message: discord.Message) -> bool:
        """Hand ``message`` on as if it had just arrived; True when it started an answer."""
        ...

    async def has_session(self, guild_id: int, thread_id: int) -> bool: ...


@dataclass(slots=True)
class Tally:
    """What one session's catch-up did."""

    threads: int = 0
    channels: int = 0
    found: int = 0
    """People's messages handed on to be checked against what the core has seen."""
    started: int = 0
    """Those that started an answer (the others were answered before, or joined a reply under way)."""


class CatchUp:
    def __init__(self, clock: Clock, pacer: GlobalPacer) -> None:
        self._clock = clock
        self._pacer = pacer
        self._started = snowflake_at(clock.now())
        self._seen = 0
        self._taken: set[int] = set()
        self._passed: dict[int, asyncio.Event] = {}
        self._one_at_a_time = asyncio.Lock()
        self.horizon = 0
        """The bot's messages up to this id were posted before this session's blind spot."""
        self.quiet_before: int | None = None
        """Within the process: a channel whose newest message is at most this id has nothing new."""
        self.pending = False
        self.session = 0
        self.tally = Tally()

    # --- the session's state --------------------------------------------------------------------
    def seen(self, message_id: int) -> None:
        """The gateway showed this message."""
        self._seen = max(self._seen, message_id)

    def new_session(self) -> None:
        """READY: anything after what the gateway showed, or after this process started, may have
        been missed."""
        self.horizon = max(self._seen, self._started)
        self.quiet_before = self._seen - (SEEN_MARGIN_MS << 22) if self._seen else None
        self.pending = True
        self._taken.clear()
        self._passed = {guild: event for guild, event in self._passed.items() if not event.is_set()}
        self.session += 1
        self.tally = Tally()

    def passed(self, guild_id: int) -> asyncio.Event:
        """Set once a pass through the guild is over (this session's, or the next one's)."""
        return self._passed.setdefault(guild_id, asyncio.Event())

    async def finish(self) -> None:
        """on_ready: once the passes through the session's guilds (queued before) are over, the
        session's catch-up is done."""
        session = self.session
        async with self._one_at_a_time:
            if session != self.session:
                return
            self.pending = False
        tally = self.tally
        log.info(
            "caught up after a new Discord session: read %d threads and %d channels, "
            "%d messages checked, %d started an answer",
            tally.threads,
            tally.channels,
            tally.found,
            tally.started,
        )

    def take(self, channel_id: int) -> bool:
        """True once per session and channel, while the session's catch-up is not over."""
        if not self.pending or channel_id in self._taken:
            return False
        self._taken.add(channel_id)
        return True

    def quiet(self, last_message_id: int | None) -> bool:
        return (
            self.quiet_before is not None
            and last_message_id is not None
            and last_message_id <= self.quiet_before
        )

    # --- reading --------------------------------------------------------------------------------
    async def unanswered(
        self,
        thread: discord.Thread,
        me: discord.abc.User,
        *,
        before: discord.abc.Snowflake | None = None,
    ) -> list[discord.Message]:
        """People's messages after the bot's latest one from before the horizon, oldest first."""
        self.tally.threads += 1
        cutoff = self._clock.now() - MAX_AGE_S
        found: list[discord.Message] = []
        page = await self._read(thread.history(limit=HISTORY, before=before), thread.id)
        for message in page:
            if message.author.id == me.id:
                if message.id <= self.horizon:
                    break
                continue
            if message.created_at.timestamp() < cutoff:
                break
            if from_a_person(message):
                found.append(message)
        else:
            if len(page) == HISTORY:
                log.warning(
                    "more than %d messages in %s since the bot's last word: only the newest "
                    "%d are answered",
                    HISTORY,
                    thread.id,
                    HISTORY,
                )
        found.reverse()
        self.tally.found += len(found)
        await self._as_members(thread.guild, found)
        return found

    async def mentions(
        self, channel: discord.TextChannel, me: discord.abc.User
    ) -> list[discord.Message]:
        """Recent mentions of the bot by people in ``channel``, oldest first."""
        self.tally.channels += 1
        cutoff = self._clock.now() - MAX_AGE_S
        if self.quiet_before is None:
            pages = channel.history(limit=HISTORY)
        else:
            after = discord.Object(self.quiet_before)
            pages = channel.history(limit=HISTORY, after=after, oldest_first=False)
        found = [
            m
            for m in sorted(await self._read(pages, channel.id), key=lambda m: m.id)
            if from_a_person(m) and mentions_me(m, me) and m.created_at.timestamp() >= cutoff
        ]
        self.tally.found += len(found)
        await self._as_members(channel.guild, found)
        return found

    async def _read(
        self, pages: AsyncIterator[discord.Message], channel_id: int
    ) -> list[discord.Message]:
        """One page of history (newest first); none when Discord refuses."""
        await self._pacer.acquire()
        try:
            return [message async for message in pages]
        except discord.HTTPException as exc:
            log.warning("could not read the history of %s: %s %s", channel_id, exc.status, exc.text)
            return []

    async def _as_members(self, guild: discord.Guild, messages: list[discord.Message]) -> None:
        """History names users, not members: each author is looked up once, so the core sees
        the name the server shows and the author's roles, as with a message that just arrived."""
        members: dict[int, discord.Member | None] = {}
        for message in messages:
            author = message.author
            if isinstance(author, discord.Member):
                continue
            if author.id not in members:
                members[author.id] = guild.get_member(author.id) or await self._fetch_member(
                    guild, author.id
                )
            member = members[author.id]
            if member is not None:
                message.author = member

    async def _fetch_member(self, guild: discord.Guild, user_id: int) -> discord.Member | None:
        await self._pacer.acquire()
        try:
            return await guild.fetch_member(user_id)
        except discord.HTTPException as exc:  # 10007: no longer in the server
            log.info(
                "could not look up member %s of %s: %s %s", user_id, guild.id, exc.status, exc.text
            )
            return None

    # --- the pass through every guild -----------------------------------------------------------
    async def guild_pass(
        self, guild: discord.Guild, me: discord.ClientUser, deliver: Deliver
    ) -> None:
        """A guild of a new session is available: catch it up (one guild at a time)."""
        session = self.session
        async with self._one_at_a_time:
            if session != self.session:
                return  # a newer session catches up on its own
            try:
                await self.guild(guild, me, deliver)
            finally:
                if session == self.session:
                    self.passed(guild.id).set()

    async def guild(self, guild: discord.Guild, me: discord.ClientUser, deliver: Deliver) -> None:
        """Catch up the guild's threads with a session, then its channels' mentions."""
        try:
            await self._pacer.acquire()
            threads = await guild.active_threads()
        except discord.HTTPException as exc:
            log.warning(
                "could not list the active threads of %s: %s %s", guild.id, exc.status, exc.text
            )
            threads = []
        threads.sort(key=lambda t: t.last_message_id or 0, reverse=True)
        read = 0
        for thread in threads:
            if read >= THREADS_PER_GUILD:
                break
            if self.quiet(thread.last_message_id) or not await deliver.has_session(
                guild.id, thread.id
            ):
                continue
            read += 1
            await deliver.catch_up_thread(thread, me)
        for channel in self._channels(guild):
            for message in await self.mentions(channel, me):
                self.tally.started += await deliver.route(message)

    def _channels(self, guild: discord.Guild) -> list[discord.TextChannel]:
        """The text channels the bot may read that may have something new, most recent first."""
        member = guild.me
        readable = [
            c
            for c in guild.text_channels
            if not self.quiet(c.last_message_id)
            and (member is None or c.permissions_for(member).read_message_history)
        ]
        readable.sort(key=lambda c: c.last_message_id or 0, reverse=True)
        return readable[:CHANNELS_PER_GUILD]


def snowflake_at(timestamp: float) -> int:
    """The smallest Discord id of a moment (seconds since the epoch)."""
    return discord.utils.time_snowflake(datetime.fromtimestamp(timestamp, UTC))
