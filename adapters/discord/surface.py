"""The Surface of one Discord thread (or DM channel): the REST calls, mapped to typed errors.

Limits: a message holds 2,000 characters (we split at 1,900); a channel's messages are created
and edited in one bucket of 5 requests per 5 s, so the thread's interim edits get 30 a minute (3 per 5 s,
leaving room for the posts that start a reply, continue it or show the todo panel), at most one
every 2 s per message; the final edit may use one more and does not wait for the 2 s.

Errors: a 429 → ``SurfaceRateLimited`` (the body's ``retry_after``; see
:mod:`adapters.discord.ratelimit`); 30046 (too many edits of a message older than an hour) and
10008 (the message is gone) → ``EditRefused``, so the presenter posts it anew; 50083 (the
thread is archived) → the thread is reopened and the call made again; 30003 (the channel's
pins are full) → our oldest pin in the channel is unpinned and the pin made again; a content
length error → ``MessageTooLong``; anything else → ``SurfaceError`` in plain words.

Every send and edit carries allowed mentions that ping nobody (no @everyone/@here, no roles,
no users): the text is the model's, and a thread's participants follow it anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import aiohttp
import discord

from adapters.discord.channel import DiscordChannelHistory, DiscordChannels
from adapters.discord.direct import DiscordPeople
from adapters.discord.files import DiscordFileTransfer
from adapters.discord.ratelimit import GlobalPacer, RateLimitedNow, RateLimitWatch
from adapters.discord.render import render
from adapters.discord.views import build_view
from bot.api.inbound import ThreadKey
from bot.api.kit import Clock
from bot.api.surface import Button, SurfaceLimits
from bot.errors import EditRefused, MessageTooLong, SurfaceError, SurfaceRateLimited

log = logging.getLogger(__name__)

T = TypeVar("T")
MAX_CONTENT = 2000
SPLIT_AT = 1900
EDITS_PER_MINUTE = 30.0
MIN_EDIT_INTERVAL = 2.0
FINAL_RESERVE = 1
"""Interim edits leave one of the channel's 5 per 5 s for the final edit, which goes at once."""
TYPING_EVERY = 8.0
"""Discord shows "is typing…" for 10 s after each request."""
TYPING_SHARE = 0.5
INTERIM_SHARE = 0.3
"""Interim edits use at most this share of the global pace, and are skipped (the next one
carries their text) rather than queued when it is taken: when many answers end at once, their
final edits and the first words of new answers never wait behind interim edits."""
"""The typing indicator is sent only while under half of the global pace is in use."""
NO_PINGS = discord.AllowedMentions(everyone=False, users=False, roles=False, replied_user=False)


class ThreadArchived(SurfaceError):
    """50083: the thread is archived (reopen it and try again)."""


class PinsFull(SurfaceError):
    """30003: the channel has as many pins as Discord allows."""


@dataclass(frozen=True, slots=True)
class Link:
    """What every surface shares: the client of the moment and our rate-limit tools."""

    client: discord.Client
    watch: RateLimitWatch
    pacer: GlobalPacer
    clock: Clock


class DiscordSurface:
    def __init__(self, link: Link, channel_id: int, key: ThreadKey, *, guild_id: int | None):
        self._link = link
        self._id = channel_id
        self._key = key
        kind = (
            discord.ChannelType.private if guild_id is None else discord.ChannelType.public_thread
        )
        self._channel = link.client.get_partial_messageable(
            channel_id, guild_id=guild_id, type=kind
        )
        self._limits = SurfaceLimits(
            max_chars=SPLIT_AT,
            min_edit_interval=MIN_EDIT_INTERVAL,
            edits_per_minute=EDITS_PER_MINUTE,
            budget_key=f"discord:channel:{channel_id}",
            can_pin=True,
            final_reserve=FINAL_RESERVE,
            workers_share_budget=False,  # a thread's channel: only its lease holder edits there
        )
        self._typing: asyncio.Task[None] | None = None
        self.files = DiscordFileTransfer(
            link.client, self._channel, lambda what, make: self._call(what, make, messages=True)
        )
        """Attachments downloaded, workspace files posted (``bot.api.transfer``)."""
        self.channel_history = DiscordChannelHistory(
            link.client, channel_id, guild_id, lambda what, make: self._call(what, make)
        )
        """The thread's parent channel, read for ``read_channel`` (``bot.api.channel``)."""
        self.other_channels = DiscordChannels(
            link.client, guild_id, lambda what, make: self._call(what, make), self._call
        )
        """Other channels of the server, read for ``read_channel`` naming one."""
        self.people = DiscordPeople(link.client, guild_id, channel_id, self._call)
        """Approvers' names, jump links to cards and direct messages (``bot.api.people``)."""

    @property
    def thread_key(self) -> ThreadKey:
        return self._key

    @property
    def limits(self) -> SurfaceLimits:
        return self._limits

    def render(self, markdown: str) -> str:
        return render(markdown)

    async def post(self, text: str, buttons: Sequence[Button] = ()) -> str:
        _check_length(text)
        view = build_view(buttons)
        message = await self._recovering(
            lambda: self._call(
                "post a message",
                lambda: self._channel.send(content=text, view=view, allowed_mentions=NO_PINGS),  # type: ignore[arg-type]
                messages=True,
            )
        )
        self._stop_typing()  # Discord ends the typing indicator when the message arrives
        return str(message.id)

    async def edit(
        self, message_id: str, text: str, buttons: Sequence[Button] = (), *, final: bool = False
    ) -> None:
        _check_length(text)
        view = build_view(buttons)
        target = self._channel.get_partial_message(int(message_id))
        await self._recovering(
            lambda: self._call(
                "edit a message",
                lambda: target.edit(content=text, view=view, allowed_mentions=NO_PINGS),
                messages=True,
                share=1.0 if final else INTERIM_SHARE,
            ),
            editing=True,
        )

    async def drop_buttons(self, message_id: str) -> None:
        target = self._channel.get_partial_message(int(message_id))
        await self._recovering(
            lambda: self._call(
                "remove a message's buttons", lambda: target.edit(view=None), messages=True
            ),
            editing=True,
        )

    async def delete(self, message_id: str) -> None:
        target = self._channel.get_partial_message(int(message_id))
        with contextlib.suppress(EditRefused):  # already gone
            await self._call("delete a message", target.delete)

    async def pin(self, message_id: str) -> None:
        target = self._channel.get_partial_message(int(message_id))
        await self._recovering(lambda: self._call("pin a message", target.pin))

    async def unpin(self, message_id: str) -> None:
        target = self._channel.get_partial_message(int(message_id))
        with contextlib.suppress(EditRefused):  # a deleted message is no longer pinned
            await self._recovering(lambda: self._call("unpin a message", target.unpin))

    async def set_status(self, text: str | None) -> None:
        """Discord's only status is "is typing…": shown (and renewed) while ``text`` is set."""
        if text is None:
            self._stop_typing()
        elif self._typing is None or self._typing.done():
            await self._type()
            self._typing = asyncio.get_running_loop().create_task(self._keep_typing())

    async def aclose(self) -> None:
        self._stop_typing()

    # --- plumbing -----------------------------------------------------------------------------
    async def _type(self) -> None:
        """One "is typing…" request, skipped when text from other threads needs the room."""
        if not self._link.pacer.try_acquire(TYPING_SHARE):
            log.debug("busy: no typing indicator in %s this time", self._id)
            return
        await self._call(
            "show typing", lambda: self._link.client.http.send_typing(self._id), paced=False
        )

    async def _keep_typing(self) -> None:
        while True:
            await self._link.clock.sleep(TYPING_EVERY)
            try:
                await self._type()
            except SurfaceError:
                log.debug("could not renew the typing indicator in %s", self._id, exc_info=True)
                return

    def _stop_typing(self) -> None:
        if self._typing is not None and not self._typing.done():
            self._typing.cancel()
        self._typing = None

    async def _recovering(self, call: Callable[[], Awaitable[T]], *, editing: bool = False) -> T:
        """Make ``call``; after an archived thread or full pins, fix that and make it once more.

        An edit in a thread that cannot be reopened is refused (the presenter posts anew, which
        reopens a thread that is not locked); anything else fails plainly.
        """
        try:
            return await call()
        except ThreadArchived:
            await self._unarchive(EditRefused if editing else SurfaceError)
        except PinsFull:
            await self._make_room_for_a_pin()
        return await call()

    async def _unarchive(self, failure: type[SurfaceError]) -> None:
        log.info("thread %s is archived; reopening it", self._id)
        try:
            await self._call(
                "reopen the archived thread",
                lambda: self._link.client.http.edit_channel(self._id, archived=False),
            )
        except SurfaceRateLimited:
            raise
        except SurfaceError as exc:
            raise failure(f"the thread is archived and could not be reopened ({exc})") from exc

    async def _make_room_for_a_pin(self) -> None:
        me = self._link.client.user
        pins = await self._call("list the pins", self._list_pins)
        ours = [m for m in pins if me is not None and m.author.id == me.id and m.pinned_at]
        if not ours:
            raise SurfaceError("the channel's pins are full of other people's messages; unpin one")
        oldest = min(ours, key=lambda m: m.pinned_at or m.created_at)
        log.info("pins full in %s; unpinning our oldest pin %s", self._id, oldest.id)
        await self._call("unpin our oldest pin", self._channel.get_partial_message(oldest.id).unpin)

    async def _list_pins(self) -> list[discord.Message]:
        return [m async for m in self._channel.pins(limit=None)]

    async def _call(
        self,
        what: str,
        make: Callable[[], Awaitable[T]],
        *,
        messages: bool = False,
        paced: bool = True,
        share: float = 1.0,
    ) -> T:
        link = self._link
        if messages and (wait := link.watch.wait_for_messages(self._id)) > 0:
            raise SurfaceRateLimited(wait, "the channel's message bucket is empty")
        if paced and share < 1.0 and not link.pacer.try_acquire(share):
            # an interim edit gives way to finals and first words; the next one carries its text
            raise SurfaceRateLimited(0.0, "many threads are streaming: this interim edit waits")
        if paced and share >= 1.0:
            await link.pacer.acquire()
        try:
            with link.watch.surface_call():
                return await make()
        except RateLimitedNow as exc:
            raise SurfaceRateLimited(exc.retry_after) from None
        except discord.HTTPException as exc:
            raise translate(exc, what) from exc
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise SurfaceError(
                f"could not {what}: Discord did not answer ({type(exc).__name__})"
            ) from exc


def translate(exc: discord.HTTPException, what: str) -> SurfaceError:
    """Discord's error, as the typed error the presenter acts on."""
    detail = f"could not {what}: Discord said {exc.status} {exc.code} {exc.text}".rstrip()
    if exc.status == 429:
        return SurfaceRateLimited(_retry_after(exc))
    if exc.code in (30046, 10008):
        return EditRefused(detail)
    if exc.code == 50083:
        return ThreadArchived(detail)
    if exc.code == 30003:
        return PinsFull(detail)
    if exc.code == 50035 and "content" in exc.text and "length" in exc.text:
        return MessageTooLong(detail)
    if exc.status == 403:
        return SurfaceError(
            f"{detail} (a permission is missing: `threadline discord-invite` lists them)"
        )
    return SurfaceError(detail)


def _retry_after(exc: discord.HTTPException) -> float:
    headers = getattr(exc.response, "headers", {}) or {}
    for name in ("X-RateLimit-Reset-After", "Retry-After"):
        with contextlib.suppress(KeyError, ValueError, TypeError):
            return float(headers[name])
    return 1.0


def _check_length(text: str) -> None:
    if len(text) > MAX_CONTENT:
        raise MessageTooLong(f"{len(text)} characters; a Discord message holds {MAX_CONTENT}")
