"""The PostgreSQL store's tables for approval requests, "Always allow here" rules and the audit
trail.

A decision is one statement: the conditional update of a pending request and its audit line (a
data-modifying ``WITH``). Under concurrent decisions from any number of processes, the row lock
makes the later ones re-check ``status = 'pending'`` against the committed decision, so exactly
one changes it and exactly one audit line is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import asyncpg

from bot.approvals.models import AllowRule, ApprovalRequest, ApprovalStatus, Approvers, AuditEntry
from bot.storage.postgres.db import PgDb

if TYPE_CHECKING:
    from bot.storage.postgres.db import Conn
from bot.storage.postgres.sessions import changed
from bot.storage.rows import keys_within

_APPROVAL_COLUMNS = (
    "id, key, call_id, tool, arguments, args_hash, requester_id, requester_name, approvers,"
    " offer_always, status, decided_by_id, decided_by_name, decided_at, created_at, expires_at,"
    " card_id, allow_subject, caution"
)
_RULE_COLUMNS = "id, scope, tool, covers, created_by, created_by_name, created_at"
_AUDIT_COLUMNS = "at, key, event, tool, args_hash, actor_id, actor_name, approval_id, detail"
_DECIDE = (
    "WITH decided AS (UPDATE approvals SET status = $1, decided_by_id = $2, decided_by_name = $3,"
    " decided_at = $4 WHERE id = $5 AND status = 'pending' AND ($6 OR expires_at > $4)"
    " RETURNING key, tool, args_hash, id)"
    f" INSERT INTO audit ({_AUDIT_COLUMNS})"
    " SELECT $4, key, $1, tool, args_hash, $7, $8, id, '' FROM decided"
)
_REVOKE = (
    f"WITH gone AS (DELETE FROM allow_rules WHERE id = $1 RETURNING {_RULE_COLUMNS}),"
    f" audited AS (INSERT INTO audit ({_AUDIT_COLUMNS})"
    " SELECT $4, scope, 'rule revoked', tool, '', $2, $3, '', 'rule ' || id FROM gone)"
    f" SELECT {_RULE_COLUMNS} FROM gone"
)


def _approval(row: asyncpg.Record) -> ApprovalRequest:
    return ApprovalRequest(
        id=row["id"],
        key=row["key"],
        call_id=row["call_id"],
        tool=row["tool"],
        arguments=row["arguments"],
        args_hash=row["args_hash"],
        requester_id=row["requester_id"],
        requester_name=row["requester_name"],
        approvers=Approvers.from_json(row["approvers"]),
        offer_always=row["offer_always"],
        status=ApprovalStatus(row["status"]),
        decided_by_id=row["decided_by_id"],
        decided_by_name=row["decided_by_name"],
        decided_at=row["decided_at"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        card_id=row["card_id"],
        allow_subject=row["allow_subject"],
        caution=row["caution"],
    )


def _rule(row: asyncpg.Record) -> AllowRule:
    return AllowRule(row[0], row[1], row[2], frozenset(row[3]), row[4], row[5], row[6])


async def _audit(db: Conn | asyncpg.Pool, entry: AuditEntry) -> None:
    await db.execute(
        f"INSERT INTO audit ({_AUDIT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        entry.at,
        entry.key,
        entry.event,
        entry.tool,
        entry.args_hash,
        entry.actor_id,
        entry.actor_name,
        entry.approval_id,
        entry.detail,
    )


class ApprovalTables:
    """Mixed into :class:`bot.storage.postgres.store.PostgresStore`."""

    async def create_approval(self: PgDb, request: ApprovalRequest) -> None:
        values: tuple[Any, ...] = (
            request.id,
            request.key,
            request.call_id,
            request.tool,
            request.arguments,
            request.args_hash,
            request.requester_id,
            request.requester_name,
            request.approvers.to_json(),
            request.offer_always,
            request.status.value,
            request.decided_by_id,
            request.decided_by_name,
            request.decided_at,
            request.created_at,
            request.expires_at,
            request.card_id,
            request.allow_subject,
            request.caution,
        )
        marks = ", ".join(f"${i}" for i in range(1, len(values) + 1))
        async with self.transaction() as db:
            await db.execute(
                f"INSERT INTO approvals ({_APPROVAL_COLUMNS}) VALUES ({marks})", *values
            )
            await _audit(
                db,
                AuditEntry(
                    request.created_at,
                    request.key,
                    "requested",
                    request.tool,
                    request.args_hash,
                    request.requester_id,
                    request.requester_name,
                    request.id,
                ),
            )

    async def get_approval(self: PgDb, approval_id: str) -> ApprovalRequest | None:
        row = await self.pool.fetchrow(
            f"SELECT {_APPROVAL_COLUMNS} FROM approvals WHERE id = $1", approval_id
        )
        return _approval(row) if row else None

    async def approvals_for(
        self: PgDb, key: str, call_ids: Sequence[str]
    ) -> dict[str, ApprovalRequest]:
        """The thread's approval requests for these calls, by call id."""
        if not call_ids:
            return {}
        rows = await self.pool.fetch(
            f"SELECT {_APPROVAL_COLUMNS} FROM approvals WHERE key = $1 AND call_id = ANY($2::text[])",
            key,
            list(call_ids),
        )
        return {a.call_id: a for a in map(_approval, rows)}

    async def decide_approval(
        self: PgDb,
        approval_id: str,
        status: ApprovalStatus,
        by_id: str | None,
        by_name: str | None,
        now: float,
    ) -> bool:
        """Record a decision once: only a pending request changes (and, unless this is the
        expiry itself, only before it expires), audited in the same statement."""
        expiry = status is ApprovalStatus.EXPIRED
        result = await self.pool.execute(
            _DECIDE,
            status.value,
            by_id,
            by_name,
            now,
            approval_id,
            expiry,
            by_id or "",
            by_name or "",
        )
        return changed(result) == 1

    async def pending_approvals(
        self: PgDb, within: str, now: float, limit: int = 100
    ) -> list[ApprovalRequest]:
        rows = await self.pool.fetch(
            f"SELECT {_APPROVAL_COLUMNS} FROM approvals WHERE status = 'pending' AND expires_at > $1"
            " AND (key = $2 OR starts_with(key, $3)) ORDER BY expires_at, id LIMIT $4",
            now,
            *keys_within(within),
            limit,
        )
        return [_approval(r) for r in rows]

    async def set_approval_card(self: PgDb, approval_id: str, card_id: str) -> None:
        await self.pool.execute(
            "UPDATE approvals SET card_id = $1 WHERE id = $2", card_id, approval_id
        )

    async def claim_notice(self: PgDb, request: ApprovalRequest, stage: str, now: float) -> bool:
        async with self.transaction() as db:
            result = await db.execute(
                "INSERT INTO approval_notices (approval_id, stage, at) VALUES ($1, $2, $3)"
                " ON CONFLICT DO NOTHING",
                request.id,
                stage,
                now,
            )
            if result != "INSERT 0 1":
                return False
            await _audit(
                db,
                AuditEntry(
                    now,
                    request.key,
                    "notified",
                    request.tool,
                    request.args_hash,
                    approval_id=request.id,
                    detail=stage,
                ),
            )
            return True

    async def add_allow_rule(self: PgDb, rule: AllowRule) -> None:
        async with self.transaction() as db:
            await db.execute(
                f"INSERT INTO allow_rules ({_RULE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                rule.id,
                rule.scope,
                rule.tool,
                sorted(rule.covers),
                rule.created_by,
                rule.created_by_name,
                rule.created_at,
            )
            await _audit(
                db,
                AuditEntry(
                    rule.created_at,
                    rule.scope,
                    "rule created",
                    rule.tool,
                    actor_id=rule.created_by,
                    actor_name=rule.created_by_name,
                    detail=f"rule {rule.id} covers {', '.join(sorted(rule.covers))}",
                ),
            )

    async def allow_rule_for(self: PgDb, scope: str, tool: str, person: str) -> AllowRule | None:
        row = await self.pool.fetchrow(
            f"SELECT {_RULE_COLUMNS} FROM allow_rules WHERE scope = $1 AND tool = $2"
            " AND $3 = ANY(covers) ORDER BY created_at LIMIT 1",
            scope,
            tool,
            person,
        )
        return _rule(row) if row else None

    async def allow_rules(self: PgDb, within: str = "") -> list[AllowRule]:
        rows = await self.pool.fetch(
            f"SELECT {_RULE_COLUMNS} FROM allow_rules"
            " WHERE scope = $1 OR starts_with(scope, $2) ORDER BY created_at, id",
            *keys_within(within),
        )
        return [_rule(r) for r in rows]

    async def revoke_allow_rule(
        self: PgDb, rule_id: str, by: str, by_name: str, now: float
    ) -> AllowRule | None:
        """Remove a rule and audit it, in one statement."""
        row = await self.pool.fetchrow(_REVOKE, rule_id, by, by_name, now)
        return _rule(row) if row else None

    async def record_audit(self: PgDb, entry: AuditEntry) -> None:
        await _audit(self.pool, entry)

    async def audit_trail(
        self: PgDb, *, within: str = "", since: float = 0.0, limit: int = 1000
    ) -> list[AuditEntry]:
        rows = await self.pool.fetch(
            f"SELECT {_AUDIT_COLUMNS} FROM audit WHERE (key = $1 OR starts_with(key, $2))"
            " AND at >= $3 ORDER BY seq LIMIT $4",
            *keys_within(within),
            since,
            limit,
        )
        return [AuditEntry(*row) for row in rows]
