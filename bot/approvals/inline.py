"""The gate of a sub-agent's run: the thread's approval rules, with the wait done inline.

A sub-agent's call that needs a person's approval is asked in the thread with the usual card,
on behalf of the person the thread's run answers; the sub-agent's run does not pause: its call
waits here, inside the parent's ``delegate_task`` call, until the request is decided or
expires. The request is recorded in the parent's session before its card shows
(:mod:`bot.approvals.inline_waits`), so a restart, a Stop or a reset that cuts the wait off closes it
rather than leaving a card whose click would resume nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from bot.api.inbound import ThreadKey
from bot.api.surface import Surface
from bot.approvals import inline_waits as asking
from bot.approvals.decisions import Decisions
from bot.approvals.service import ApprovalService
from bot.engine.events import ApprovalNeeded, EventSink
from bot.engine.gate import Proceed, Refuse, Verdict, Wait
from bot.errors import ThreadlineError
from bot.infra.clock import sleep_until_set
from bot.llm.messages import ToolCall
from bot.sessions.model import Session
from bot.tools.base import Tool, ToolContext

log = logging.getLogger(__name__)

Say = Callable[[str], Awaitable[None]]
"""Shows a line of the delegation's activity in the thread."""
POLL_S = 5.0
"""How often a wait reads the request again (a decision made on another worker, an expiry)."""
UNSHOWN = "refused: this call may run without a card, but there is no thread to show it in first."
NOWHERE = "refused: this call needs a person's approval, and there is no thread to ask it in."


class InlineGate:
    def __init__(
        self,
        approvals: ApprovalService,
        decisions: Decisions,
        parent: Session,
        sink: EventSink | None,
        say: Say | None = None,
    ) -> None:
        self._approvals = approvals
        self._decisions = decisions
        self._parent = parent
        self._sink = sink
        self._say = say

    def free(self, ctx: ToolContext, tool: Tool) -> bool:
        return self._approvals.free(ctx, tool)

    async def check(self, ctx: ToolContext, call: ToolCall, tool: Tool) -> Verdict:
        verdict = await self._approvals.check(ctx, call, tool)
        if isinstance(verdict, Proceed) and verdict.allowed_by and self._sink is None:
            return Refuse(UNSHOWN)  # a rule's call runs only where the thread shows it first
        if not isinstance(verdict, Wait):
            return verdict
        request = verdict.request
        if self._sink is None:
            await self._decisions.expire(request, None)
            return Refuse(NOWHERE)
        woken = self._decisions.decided.watch(request.id)
        shown: asyncio.Future[None] | None = None
        try:
            if verdict.new:  # recorded before its card shows: a restart from now on closes it
                asking.remember(self._parent, request)
                await self._decisions.holds.sessions.save_state(self._parent)
                shown = asyncio.ensure_future(self._sink(ApprovalNeeded(request, inline=True)))
                await asyncio.shield(shown)
                if self._say is not None:  # below the card, with the Stop button
                    await self._say(f"waiting for a decision on {call.name}")
            while isinstance(verdict, Wait):
                await sleep_until_set(self._decisions.holds.clock, POLL_S, woken)
                woken.clear()
                waited = verdict.request
                if waited.pending and waited.expires_at <= self._decisions.holds.clock.now():
                    await self._decisions.expire(waited, self._surface())  # its card says so
                verdict = await self._approvals.check(ctx, call, tool)
        except asyncio.CancelledError:
            if shown is not None:  # a card being posted lands (its id stored) before it is closed
                await asyncio.wait([shown])
            await self._closed(request.id)
            raise
        finally:
            self._decisions.decided.unwatch(request.id, woken)
        asking.forget(self._parent, request.id)  # stored before the call runs
        await self._decisions.holds.sessions.save_state(self._parent)
        return verdict

    def _surface(self) -> Surface | None:
        return self._decisions.surfaces.surface_for(ThreadKey(self._parent.key))

    async def _closed(self, approval_id: str) -> None:
        """The wait was cut off (a Stop): the request expires and its card says so."""
        try:
            await asking.close(
                self._decisions, self._parent, self._surface(), asking.STOPPED, only=approval_id
            )
        except ThreadlineError:  # the store or the platform failed: a restart closes it then
            log.warning("could not close inline approval %s", approval_id, exc_info=True)
