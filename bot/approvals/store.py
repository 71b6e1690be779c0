"""What approvals need kept: the requests (decided exactly once), "Always allow here" rules, and
the audit trail (every request, decision, expiry and rule, written in the same transaction as the
change it records)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from bot.approvals.models import AllowRule, ApprovalRequest, ApprovalStatus, AuditEntry


class ApprovalStore(Protocol):
    async def create_approval(self, request: ApprovalRequest) -> None:
        """Keep a new request (audited as ``requested``)."""
        ...

    async def get_approval(self, approval_id: str) -> ApprovalRequest | None: ...

    async def approvals_for(self, key: str, call_ids: Sequence[str]) -> dict[str, ApprovalRequest]:
        """The thread's approval requests for these calls, by call id."""
        ...

    async def decide_approval(
        self,
        approval_id: str,
        status: ApprovalStatus,
        by_id: str | None,
        by_name: str | None,
        now: float,
    ) -> bool:
        """Record a decision exactly once: a conditional update of a pending request (unexpired,
        unless ``status`` is the expiry), audited with it. True when this call made the change."""
        ...

    async def pending_approvals(
        self, within: str, now: float, limit: int = 100
    ) -> list[ApprovalRequest]:
        """The requests still waiting for a decision at ``now`` (pending, unexpired) whose key is
        ``within`` (a key or its first parts, compared whole as for :meth:`allow_rules`) or
        under it, the one expiring first first; at most ``limit``."""
        ...

    async def set_approval_card(self, approval_id: str, card_id: str) -> None: ...

    async def claim_notice(self, request: ApprovalRequest, stage: str, now: float) -> bool:
        """Claim the direct messages of ``stage`` (``approvers``, ``escalation``) for the request,
        before they are sent (audited as ``notified``): True for the first claim only, so a
        restart or a second worker never sends them again."""
        ...

    async def add_allow_rule(self, rule: AllowRule) -> None:
        """Keep a rule (audited as ``rule created``)."""
        ...

    async def allow_rule_for(self, scope: str, tool: str, person: str) -> AllowRule | None:
        """A rule that lets ``person``'s calls of ``tool`` run without a card in ``scope``."""
        ...

    async def allow_rules(self, within: str = "") -> list[AllowRule]:
        """The rules whose scope is ``within`` (a key or its first parts) or under it, parts
        compared whole (``slack:T1:C1`` lists ``slack:T1:C1``, not ``slack:T1:C10``); all of them
        for ``""``. Oldest first."""
        ...

    async def revoke_allow_rule(
        self, rule_id: str, by: str, by_name: str, now: float
    ) -> AllowRule | None:
        """Remove a rule (audited as ``rule revoked``); the rule, or None when there was none."""
        ...

    async def record_audit(self, entry: AuditEntry) -> None: ...

    async def audit_trail(
        self, *, within: str = "", since: float = 0.0, limit: int = 1000
    ) -> list[AuditEntry]:
        """The first ``limit`` entries, oldest first, at or after ``since``, whose key is
        ``within`` (a key or its first parts) or under it, parts compared whole as for
        :meth:`allow_rules`; every key for ``""``."""
        ...
