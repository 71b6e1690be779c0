"""Approvals as a service: the engine's gate, and recording a decision or an expiry once.

A request is created when a call needs approval, persisted with the session, and decided
exactly once by a conditional update in the store. What follows a decision (the card, the run
resumed) is :mod:`bot.approvals.decisions`' job.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, replace

from pydantic import BaseModel

from bot.api.inbound import Author
from bot.approvals.models import (
    AllowRule,
    ApprovalRequest,
    ApprovalStatus,
    AuditEntry,
    Choice,
    exact_rule_tool,
    rule_tool,
)
from bot.approvals.rules import ToolRules, arguments_hash, needs_approval
from bot.approvals.store import ApprovalStore
from bot.config import Settings
from bot.engine.gate import Proceed, Refuse, Verdict, Wait
from bot.infra import metrics
from bot.infra.clock import Clock
from bot.llm.messages import ToolCall
from bot.policy.who import Policy
from bot.scheduler.jobs import Job
from bot.scheduler.service import Scheduler
from bot.tools.base import Approval, Tool, ToolContext, ToolError

log = logging.getLogger(__name__)

EXPIRE_JOB = "expire_approval"
NOTICE_JOB = "approval_notice"
"""Tell the approvers by a direct message (:mod:`bot.approvals.notices`)."""
ESCALATE_JOB = "approval_escalation"
"""Widen who may decide and tell the escalation's people (:mod:`bot.approvals.notices`)."""
Names = Callable[[str, Collection[str]], Awaitable[Mapping[str, str]]]
"""The names people see for user and role ids, as the thread's adapter finds them."""


async def _no_names(key: str, ids: Collection[str]) -> Mapping[str, str]:
    return {}


NOT_ALLOWED = "This isn't yours to decide: {who} can approve or deny this request."
NOT_HERE = "You can't use Threadline here, so this isn't yours to decide; nothing was changed."


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
        store: ApprovalStore,
        clock: Clock,
        scheduler: Scheduler,
        policy: Policy,
        scope_of: Callable[[str], str] = str,
        names: Names = _no_names,
    ) -> None:
        self._policy = policy
        self._names = names
        self._scope_of = scope_of
        """Where "Always allow here" applies for a thread: its channel when the adapter says
        which that is, else the thread itself."""
        self._settings = settings
        self.rules = ToolRules(settings)
        self._store = store
        self._clock = clock
        self._scheduler = scheduler

    def mode(self, key: str, tool: Tool) -> Approval:
        return self.rules.mode(key, tool)

    # --- the gate ---

    def free(self, ctx: ToolContext, tool: Tool) -> bool:
        return self.mode(ctx.thread_key, tool) == "never" and not tool.side_effects

    async def check(self, ctx: ToolContext, call: ToolCall, tool: Tool) -> Verdict:
        if not self._policy.use_tool(ctx.requester, ctx.thread_key, tool.name).allowed:
            who = ctx.requester.person if ctx.requester else "this person"
            return Refuse(
                f"refused: {who} may not have me use {tool.name} here (an operator's setting); it was not run."
            )
        if self.free(ctx, tool):
            return Proceed()  # nothing to ask and nothing that could have been asked before
        existing = (await self._store.approvals_for(ctx.thread_key, [call.id])).get(call.id)
        if existing is not None:
            return await self._verdict(existing, call)
        args = _arguments(tool, call)
        mode = self.rules.mode(ctx.thread_key, tool, args)
        subject = self.rules.subject(tool, args)
        requester = ctx.requester or Author(id="", display_name="someone")
        digest = arguments_hash(call.arguments)
        rule = await self._rule_for(ctx.thread_key, tool, mode, requester, subject, digest)
        if not needs_approval(mode, allowed_here=rule is not None):
            if rule is None:
                return Proceed()
            await self._store.record_audit(
                AuditEntry(
                    self._clock.now(),
                    ctx.thread_key,
                    "allowed by rule",
                    tool.name,
                    digest,
                    requester.id,
                    requester.person,
                    detail=f"rule {rule.id} by {rule.created_by_name}",
                )
            )
            return Proceed(allowed_by=allowed_by(rule))
        approvers = self.rules.approvers(ctx.thread_key, tool.name)
        if approvers.people():
            found = await self._names(ctx.thread_key, approvers.people())
            approvers = replace(approvers, names=tuple(sorted(found.items())))
        now = self._clock.now()
        request = ApprovalRequest(
            id=secrets.token_urlsafe(16),
            key=ctx.thread_key,
            call_id=call.id,
            tool=tool.name,
            arguments=call.arguments,
            args_hash=digest,
            requester_id=requester.id,
            requester_name=requester.person,
            approvers=approvers,
            created_at=now,
            expires_at=now + self._settings.approval_ttl_s,
            offer_always=self.rules.offer_always(ctx.thread_key, tool, mode),
            allow_subject=subject,
            caution=tool.caution,
        )
        await self._store.create_approval(request)
        metrics.APPROVALS_REQUESTED.inc()
        await self._schedule(request, requester)
        log.info(
            "call %s of %s in %s waits for approval %s",
            call.id,
            tool.name,
            ctx.thread_key,
            request.id,
        )
        return Wait(request, new=True)

    async def _schedule(self, request: ApprovalRequest, requester: Author) -> None:
        """The request's timers: its expiry; the direct message to its approvers when the
        person who asked may not decide; its escalation."""
        payload = {"approval_id": request.id}
        jobs = [Job(f"expire:{request.id}", EXPIRE_JOB, request.expires_at, payload)]
        if self.tells_approvers(request, requester):
            jobs.append(Job(f"notice:{request.id}", NOTICE_JOB, request.created_at, payload))
        if request.escalates_at is not None and self._settings.approval_notify_max:
            jobs.append(Job(f"escalate:{request.id}", ESCALATE_JOB, request.escalates_at, payload))
        for job in jobs:
            await self._scheduler.schedule(job)

    def tells_approvers(self, request: ApprovalRequest, requester: Author) -> bool:
        """Whether the approvers get a direct message: they are listed, told by the settings,
        and the person who asked may not decide themselves."""
        approvers = request.approvers
        if not approvers.notify or approvers.anyone or not self._settings.approval_notify_max:
            return False
        if not approvers.users and not approvers.roles:
            return False
        return not self._policy.decide(
            requester, request.key, approvers, request.requester_id
        ).allowed

    async def _rule_for(
        self,
        key: str,
        tool: Tool,
        mode: Approval,
        requester: Author,
        subject: str | None,
        digest: str,
    ) -> AllowRule | None:
        """The "Always allow here" rule that covers this person's call, where rules apply: one
        for the tool (or its subject), else one for this exact call."""
        if mode != "ask" or not requester.id or not self.rules.offer_always(key, tool, mode):
            return None
        scope = self._scope_of(key)
        for name in (rule_tool(tool.name, subject), exact_rule_tool(tool.name, digest)):
            found = await self._store.allow_rule_for(scope, name, requester.id)
            if found is not None:
                return found
        return None

    async def _verdict(self, request: ApprovalRequest, call: ToolCall) -> Verdict:
        if request.pending and request.expires_at <= self._clock.now():
            request = (
                await self.expire(request) or await self._store.get_approval(request.id) or request
            )
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
        """Check the policy and record ``actor``'s choice once: the request is read once, and
        read again only when another click won the race."""
        request = await self._store.get_approval(approval_id)
        if request is None:
            return Outcome(False, "This approval request is unknown; nothing was changed.")
        if not request.pending:
            return Outcome(False, _already(request), request)
        now = self._clock.now()
        if request.expires_at <= now:
            expired = await self.expire(request)
            return Outcome(
                expired is not None, "This request has expired; nothing was run.", expired
            )
        refused = self._refused(request, actor)
        if refused is not None:
            return Outcome(False, refused, request)
        status = ApprovalStatus.DENIED if choice is Choice.DENY else ApprovalStatus.APPROVED
        if not await self._store.decide_approval(
            approval_id, status, actor.id, actor.display_name, now
        ):
            latest = await self._store.get_approval(approval_id)
            return Outcome(False, _already(latest) if latest else "Already decided.", latest)
        if choice in _RULES and request.offer_always:  # never from a forged click
            rule = AllowRule(
                secrets.token_hex(8),
                self._scope_of(request.key),
                request.exact_rule_tool if choice is Choice.EXACT else request.rule_tool,
                frozenset({request.requester_id}),
                actor.id,
                actor.display_name,
                now,
            )
            await self._store.add_allow_rule(rule)
        for job in ("expire", "notice", "escalate"):
            await self._scheduler.cancel(f"{job}:{approval_id}")
        decided = replace(
            request,
            status=status,
            decided_by_id=actor.id,
            decided_by_name=actor.display_name,
            decided_at=now,
        )
        log.info("approval %s %s by %s", approval_id, status.value, actor.id)
        metrics.approval_decided(status.value)
        words = {ApprovalStatus.APPROVED: "Approved", ApprovalStatus.DENIED: "Denied"}[status]
        return Outcome(True, f"{words}.", decided)

    def _refused(self, request: ApprovalRequest, actor: Author) -> str | None:
        """What the clicker is told when the policy says they may not decide (None: they may);
        a deny list wins over every approver setting, ``anyone`` included."""
        escalated = request.escalated(self._clock.now())
        verdict = self._policy.decide(
            actor, request.key, request.approvers, request.requester_id, escalated=escalated
        )
        if verdict.allowed:
            return None
        log.info("%s may not decide approval %s: %s", actor.id, request.id, verdict.reason)
        if not self._policy.talk(actor, request.key).allowed:
            return NOT_HERE
        return NOT_ALLOWED.format(who=who_decides(request, escalated=escalated))

    async def expire(self, request: ApprovalRequest) -> ApprovalRequest | None:
        """Expire a pending request; the expired request when this call expired it, else None."""
        now = self._clock.now()
        if not await self._store.decide_approval(
            request.id, ApprovalStatus.EXPIRED, None, None, now
        ):
            return None
        log.info("approval %s expired", request.id)
        metrics.approval_decided(ApprovalStatus.EXPIRED.value)
        return replace(request, status=ApprovalStatus.EXPIRED, decided_at=now)


_RULES = frozenset({Choice.ALWAYS, Choice.EXACT})
"""The choices that make an "Always allow here" rule besides approving the call."""


def allowed_by(rule: AllowRule) -> str:
    """Why a call runs without a card, for the thread."""
    what = "this exact call" if rule.exact else f"{rule.covered()} here"
    return f"allowed by {rule.created_by_name}'s “Always allow {what}”"


def _arguments(tool: Tool, call: ToolCall) -> BaseModel | None:
    """The call's arguments, parsed, for a tool that decides per call (else None: the engine
    has checked them already)."""
    if tool.approval_for is None and tool.rule_subject is None:
        return None
    try:
        return tool.parse(call.arguments)
    except ToolError:
        return None


def who_decides(request: ApprovalRequest, *, escalated: bool) -> str:
    """Who may decide the request now, in words."""
    who = request.approvers.describe()
    if escalated and request.approvers.escalates:
        return f"{who} or {request.approvers.describe_escalation()}"
    return who


def _already(request: ApprovalRequest) -> str:
    if request.status is ApprovalStatus.EXPIRED:
        return "This request has already expired; nothing was run."
    return f"This request was already {request.status.value} by {request.decided_by_name}."
