"""Bolt listeners: acknowledge at once, then translate and call the core in an owned task.

A listener only parses the payload and starts a task, so Slack always gets its
acknowledgement well within 3 seconds, however busy the core is. The task resolves the
speaker's name, checks that the bot has joined the thread (for messages without a mention),
and hands an :class:`~bot.conversation.Inbound` to ``core.handle``. Messages of one thread are
prepared one at a time, in the order they arrived, so a slow name lookup cannot let a later
message overtake an earlier one. A click is acknowledged first, then routed to
``core.on_action``; its note goes to the clicker alone with ``chat.postEphemeral``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from slack_bolt.context.ack.async_ack import AsyncAck

from adapters.slack.api import Identity, SlackApi
from adapters.slack.blocks import message_payload
from adapters.slack.events import Click, PersonMessage, parse_click, parse_message, thread_key
from adapters.slack.groups import UserGroups
from adapters.slack.incoming import mentioned_users, plain_text
from adapters.slack.names import DisplayNames
from adapters.slack.render import render
from adapters.slack.surface import SlackSurface, StatusSupport
from bot.conversation import Author, Inbound, ThreadKey
from bot.errors import SurfaceError
from bot.present.surface import SurfaceLimits
from bot.threads import ThreadLocks

if TYPE_CHECKING:
    from bot.core import Core

log = logging.getLogger(__name__)

Spawn = Callable[[Coroutine[Any, Any, None]], None]
FAILED = "Something went wrong while answering; the server log has the details."
CLICK_FAILED = "Something went wrong with that button; the server log has the details."


class SlackHandlers:
    def __init__(
        self,
        core: Core,
        api: SlackApi,
        identity: Identity,
        names: DisplayNames,
        groups: UserGroups,
        limits: SurfaceLimits,
        spawn: Spawn,
    ) -> None:
        self.core = core
        self.api = api
        self.identity = identity
        self.names = names
        self.groups = groups
        self.limits = limits
        self._spawn = spawn
        self._status = StatusSupport()
        self._order = ThreadLocks()

    def surface(self, key: ThreadKey) -> SlackSurface:
        return SlackSurface(self.api, key, self.limits, self._status)

    # --- Bolt listeners (each returns at once) --------------------------------------------------
    async def on_message(self, event: dict[str, Any]) -> None:
        """``message`` and ``app_mention`` events."""
        message = parse_message(event, self.identity.bot_user_id)
        if message is not None:
            self._spawn(self._answer(message))

    async def on_other_event(self) -> None:
        """Any other event: acknowledged, nothing to do."""

    async def on_action(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        click = parse_click(body)
        if click is None:
            log.info("ignoring an interaction that is not a button click")
            return
        self._spawn(self._click(click))

    # --- the work, in owned tasks ---------------------------------------------------------------
    async def _answer(self, message: PersonMessage) -> None:
        key = message.thread_key(self.identity.team_id)
        async with self._order.hold(key):
            if message.needs_session and not await self.core.has_session(key):
                return
            inbound = await self._inbound(message, key)
            self._spawn(self._handle(inbound))
            await asyncio.sleep(0)  # let it take its place in the core before the next message

    async def _inbound(self, message: PersonMessage, key: ThreadKey) -> Inbound:
        author = Author(f"slack:{message.user}", await self.names.name(message.user))
        names = {u: await self.names.name(u) for u in mentioned_users(message.text)}
        return Inbound(
            thread_key=key,
            author=author,
            text=plain_text(message.text, names),
            event_id=message.event_id(self.identity.team_id),
            files=message.files,
        )

    async def _handle(self, inbound: Inbound) -> None:
        surface = self.surface(inbound.thread_key)
        try:
            await self.core.handle(inbound, surface)
        except Exception:
            log.exception("answering %s in %s failed", inbound.event_id, inbound.thread_key)
            try:
                await surface.post(render(FAILED))
            except SurfaceError:
                log.warning("could not tell %s that answering failed", inbound.thread_key)

    async def _click(self, click: Click) -> None:
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
            await self.api.ephemeral(click.channel, click.user, click.root_ts, message_payload(render(note)))
        except SurfaceError:
            log.warning("could not show %s the note about their click", click.user, exc_info=True)
