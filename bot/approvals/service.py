"""Approvals as a service: the engine's gate, and the decision on a click or at expiry.

A request is created when a call needs approval, persisted with the session, and decided
exactly once by a conditional update in the store. Resuming the run is the core's job.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from bot.approvals.models import ApprovalRequest, ApprovalStatus, Approvers, Choice
from bot.approvals.policy import arguments_hash, may_decide, needs_approval
from bot.clock import Clock
from bot.config import ApproversSettings, Settings, ToolSettings
from bot.conversation import Author
from bot.engine.gate import Proceed, Refuse, Verdict, Wait
from bot.llm.messages import ToolCall
from bot.scheduler.jobs import Job
from bot.scheduler.service import Scheduler
from bot.storage.protocol import Store
from bot.tools.base import Approval, Tool, ToolContext

log = logging.getLogger(__name__)

EXPIRE_JOB = "expire_approval"
NOT_ALLOWED = "This isn't yours to decide: {who} can approve or deny this request."


@dataclass(frozen=True, slots=True)
class Outcome:
    changed: bool
    """This click decided the request."""
    note: str
    """What the clicker is told privately."""
    request: ApprovalRequest | None = None


def result_for(request: ApprovalRequest) -> str | None:
    """What the model is told for a decided request that was not approved."""
    if request.status is ApprovalStatus.DENIED:
        return f"denied by {request.decided_by_name}: the call was not run."
    if request.status is ApprovalStatus.EXPIRED:
        return "expired: nobody approved the call in time, so it was not run."
    return None


class ApprovalService:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        clock: Clock,
        scheduler: Scheduler,
        scope_of: Callable[[str], str] = str,
    ) -> None:
        self._scope_of = scope_of
        """Where "Always allow here" applies for a thread: its channel when the adapter says
        which that is, else the thread itself."""
        self._settings = settings
        self._store = store
        self._clock = clock
        self._scheduler = scheduler

    # --- configuration ---

    def _tool_settings(self, key: str, tool: str) -> list[ToolSettings]:
        found = []
        channel = self._settings.channel(key)
        if channel is not None and tool in channel.tools:
            found.append(channel.tools[tool])
        if tool in self._settings.tools:
            found.append(self._settings.tools[tool])
        return found

    def mode(self, key: str, tool: Tool) -> Approval:
        for item in self._tool_settings(key, tool.name):
            if item.approval is not None:
                return item.approval
        return tool.approval

    def approvers(self, key: str, tool: str) -> Approvers:
        chosen: ApproversSettings | None = None
        for item in self._tool_settings(key, tool):
            if item.approvers is not None:
                chosen = item.approvers
                break
        channel = self._settings.channel(key)
        if chosen is None and channel is not None:
            chosen = channel.approvers
        if chosen is None:
            return Approvers()
        return Approvers(chosen.requester, frozenset(chosen.users), frozenset(chosen.roles), chosen.anyone)

    def _offer_always(self, key: str, tool: Tool, mode: Approval) -> bool:
        for item in self._tool_settings(key, tool.name):
            if item.offer_always is not None:
                return item.offer_always
        return mode == "ask"

    # --- the gate ---

    def free(self, ctx: ToolContext, tool: Tool) -> bool:
        return self.mode(ctx.thread_key, tool) == "never" and not tool.side_effects

    async def check(self, ctx: ToolContext, call: ToolCall, tool: Tool) -> Verdict:
        if self.free(ctx, tool):
            return Proceed()  # nothing to ask and nothing that could have been asked before
        mode = self.mode(ctx.thread_key, tool)
        existing = (await self._store.approvals_for(ctx.thread_key, [call.id])).get(call.id)
        if existing is not None:
            return await self._verdict(existing, call)
        allowed = mode == "ask" and await self._store.is_allowed(self._scope_of(ctx.thread_key), tool.name)
        if not needs_approval(mode, allowed_here=allowed):
            return Proceed()
        now = self._clock.now()
        requester = ctx.requester or Author(id="", display_name="someone")
        request = ApprovalRequest(
            id=secrets.token_urlsafe(16),
            key=ctx.thread_key,
            call_id=call.id,
            tool=tool.name,
            arguments=call.arguments,
            args_hash=arguments_hash(call.arguments),
            requester_id=requester.id,
            requester_name=requester.display_name,
            approvers=self.approvers(ctx.thread_key, tool.name),
            created_at=now,
            expires_at=now + self._settings.approval_ttl_s,
            offer_always=self._offer_always(ctx.thread_key, tool, mode),
        )
        await self._store.create_approval(request)
        await self._scheduler.schedule(
            Job(f"expire:{request.id}", EXPIRE_JOB, request.expires_at, {"approval_id": request.id})
        )
        log.info("call %s of %s in %s waits for approval %s", call.id, tool.name, ctx.thread_key, request.id)
        return Wait(request, new=True)

    async def _verdict(self, request: ApprovalRequest, call: ToolCall) -> Verdict:
        if request.pending and request.expires_at <= self._clock.now():
            await self.expire(request.id)
            request = await self._store.get_approval(request.id) or request
        if request.pending:
            return Wait(request, new=False)
        refused = result_for(request)
        if refused is not None:
            return Refuse(refused)
        if request.args_hash != arguments_hash(call.arguments):  # never run what was not shown
            return Refuse("refused: the arguments differ from the ones that were approved.")
        return Proceed()

    # --- decisions ---

    async def decide(self, approval_id: str, actor: Author, choice: Choice) -> Outcome:
        request = await self._store.get_approval(approval_id)
        if request is None:
            return Outcome(False, "This approval request is unknown; nothing was changed.")
        if not request.pending:
            return Outcome(False, _already(request), request)
        now = self._clock.now()
        if request.expires_at <= now:
            expired = await self.expire(approval_id)
            return Outcome(expired is not None, "This request has expired; nothing was run.", expired)
        if not may_decide(request.approvers, request.requester_id, actor):
            return Outcome(False, NOT_ALLOWED.format(who=request.approvers.describe()), request)
        status = ApprovalStatus.DENIED if choice is Choice.DENY else ApprovalStatus.APPROVED
        if not await self._store.decide_approval(approval_id, status, actor.id, actor.display_name, now):
            latest = await self._store.get_approval(approval_id)
            return Outcome(False, _already(latest) if latest else "Already decided.", latest)
        if choice is Choice.ALWAYS:
            await self._store.add_allow_rule(self._scope_of(request.key), request.tool, actor.id, now)
        await self._scheduler.cancel(f"expire:{approval_id}")
        decided = await self._store.get_approval(approval_id)
        log.info("approval %s %s by %s", approval_id, status.value, actor.id)
        words = {ApprovalStatus.APPROVED: "Approved", ApprovalStatus.DENIED: "Denied"}[status]
        return Outcome(True, f"{words}.", decided)

    async def expire(self, approval_id: str) -> ApprovalRequest | None:
        """Expire a pending request; the request when this call expired it, else None."""
        if not await self._store.decide_approval(approval_id, ApprovalStatus.EXPIRED, None, None, self._clock.now()):
            return None
        log.info("approval %s expired", approval_id)
        return await self._store.get_approval(approval_id)


def _already(request: ApprovalRequest) -> str:
    if request.status is ApprovalStatus.EXPIRED:
        return "This request has already expired; nothing was run."
    return f"This request was already {request.status.value} by {request.decided_by_name}."
