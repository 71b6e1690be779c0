"""Between discord.py's events and the core: owned tasks, surfaces, clicks and commands.

Nothing here waits for the core inside a platform's deadline: a message is handed to the core
in a background task; a click or a slash command is acknowledged first (Discord wants an
answer within 3 s), then handled in a background task whose result comes back as an
ephemeral follow-up. Every task is kept in a set, and :meth:`Bridge.drain` ends them on stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import discord

from adapters.discord.commands import Command, run_command
from adapters.discord.identity import author_of, parse_key, thread_key
from adapters.discord.ratelimit import GlobalPacer, RateLimitWatch
from adapters.discord.surface import NO_PINGS, DiscordSurface, Link
from bot.clock import Clock
from bot.conversation import Inbound, ThreadKey
from bot.errors import SurfaceError

if TYPE_CHECKING:
    from bot.core import Core

log = logging.getLogger(__name__)

T = TypeVar("T")
FAILED = "⚠️ Something went wrong while answering; the server log has the details."
CLICK_FAILED = "Something went wrong with that button; the server log has the details."
COMMAND_FAILED = "Something went wrong; the server log has the details."


class Bridge:
    def __init__(self, core: Core, clock: Clock) -> None:
        self.core = core
        self.clock = clock
        self.watch = RateLimitWatch(clock)
        self.pacer = GlobalPacer(clock)
        self.client: discord.Client | None = None
        self.ready = asyncio.Event()
        self.stopping = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._order: dict[int, tuple[asyncio.Lock, int]] = {}

    @property
    def me(self) -> discord.ClientUser | None:
        return None if self.client is None else self.client.user

    @property
    def clicks(self) -> Bridge:
        return self

    # --- tasks --------------------------------------------------------------------------------
    def spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T] | None:
        if self.stopping:
            coro.close()
            return None
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def drain(self, grace: float) -> None:
        """Let running work finish for up to ``grace`` seconds, then cancel the rest."""
        self.stopping = True
        if not self._tasks:
            return
        _, pending = await asyncio.wait(set(self._tasks), timeout=grace)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    async def idle(self) -> None:
        """Return once no message, click or command is being handled."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    @contextlib.asynccontextmanager
    async def ordered(self, channel_id: int) -> AsyncIterator[None]:
        """Messages of one channel are routed one at a time, in arrival order."""
        lock, users = self._order.get(channel_id, (asyncio.Lock(), 0))
        self._order[channel_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._order[channel_id]
            if users <= 1:
                del self._order[channel_id]
            else:
                self._order[channel_id] = (lock, users - 1)

    # --- messages -----------------------------------------------------------------------------
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

    async def fetch_channel(self, channel_id: int) -> object:
        if self.client is None:
            raise RuntimeError("the Discord client is not logged in")
        return await self.client.fetch_channel(channel_id)

    def answer(self, inbound: Inbound, channel_id: int, guild_id: int | None) -> None:
        self.spawn(self._answer(inbound, self.surface(channel_id, guild_id)))

    async def _answer(self, inbound: Inbound, surface: DiscordSurface) -> None:
        try:
            await self.core.handle(inbound, surface)
        except Exception:
            log.exception("answering %s in %s failed", inbound.event_id, inbound.thread_key)
            with contextlib.suppress(SurfaceError):
                await surface.post(FAILED)
        finally:
            await surface.aclose()

    # --- clicks and commands ------------------------------------------------------------------
    async def on_click(self, interaction: discord.Interaction[Any], action_id: str) -> None:
        try:
            await interaction.response.defer()  # acknowledged: the message stays as it is
        except discord.HTTPException as exc:
            log.warning("could not acknowledge a click on %r: %s %s", action_id, exc.status, exc.text)
            return
        self.spawn(self._click(interaction, action_id))

    async def _click(self, interaction: discord.Interaction[Any], action_id: str) -> None:
        surface = self.surface(_channel_id(interaction), interaction.guild_id)
        try:
            clicked = str(interaction.message.id) if interaction.message is not None else None
            note = await self.core.on_action(action_id, author_of(interaction.user), surface, clicked)
        except Exception:
            log.exception("the click on %r in %s failed", action_id, surface.thread_key)
            note = CLICK_FAILED
        finally:
            await surface.aclose()
        if note:
            await _follow_up(interaction, note)

    async def on_command(self, interaction: discord.Interaction[Any], command: Command) -> None:
        try:
            await interaction.response.defer(ephemeral=True, thinking=True)
        except discord.HTTPException as exc:
            log.warning("could not acknowledge /threadline %s: %s %s", command, exc.status, exc.text)
            return
        self.spawn(self._command(interaction, command))

    async def _command(self, interaction: discord.Interaction[Any], command: Command) -> None:
        surface = self.surface(_channel_id(interaction), interaction.guild_id)
        try:
            note = await run_command(
                self.core, command, surface.thread_key, surface, author_of(interaction.user)
            )
        except Exception:
            log.exception("/threadline %s in %s failed", command, surface.thread_key)
            note = COMMAND_FAILED
        finally:
            await surface.aclose()
        await _follow_up(interaction, note)


def _channel_id(interaction: discord.Interaction[Any]) -> int:
    if interaction.channel_id is None:
        raise RuntimeError("an interaction without a channel")
    return interaction.channel_id


async def _follow_up(interaction: discord.Interaction[Any], note: str) -> None:
    """A private answer to the person who clicked or typed the command."""
    try:
        await interaction.followup.send(note[:2000], ephemeral=True, allowed_mentions=NO_PINGS)
    except discord.HTTPException as exc:
        log.warning("could not send the private note: %s %s", exc.status, exc.text)
