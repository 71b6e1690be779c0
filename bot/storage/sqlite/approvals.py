"""The SQLite store's tables for approval requests and "Always allow here" rules."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import aiosqlite

from bot.approvals.models import AllowRule, ApprovalRequest, ApprovalStatus, Approvers, AuditEntry
from bot.storage.rows import keys_within
from bot.storage.sqlite.db import Db

_APPROVAL_COLUMNS = (
    "id, key, call_id, tool, arguments, args_hash, requester_id, requester_name, approvers,"
    " offer_always, status, decided_by_id, decided_by_name, decided_at, created_at, expires_at,"
    " card_id, allow_subject, caution"
)


def _approval(row: Sequence[Any]) -> ApprovalRequest:
    return ApprovalRequest(
        id=row[0],
        key=row[1],
        call_id=row[2],
        tool=row[3],
        arguments=row[4],
        args_hash=row[5],
        requester_id=row[6],
        requester_name=row[7],
        approvers=Approvers.from_json(row[8]),
        offer_always=bool(row[9]),
        status=ApprovalStatus(row[10]),
        decided_by_id=row[11],
        decided_by_name=row[12],
        decided_at=row[13],
        created_at=row[14],
        expires_at=row[15],
        card_id=row[16],
        allow_subject=row[17],
        caution=row[18],
    )


class ApprovalTables:
    """Mixed into :class:`bot.storage.sqlite.store.SqliteStore`."""

    async def create_approval(self: Db, request: ApprovalRequest) -> None:
        async with self.transaction() as db:
            await db.execute(
                f"INSERT INTO approvals ({_APPROVAL_COLUMNS}) VALUES"
                " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    request.id,
                    request.key,
                    request.call_id,
                    request.tool,
                    request.arguments,
                    request.args_hash,
                    request.requester_id,
                    request.requester_name,
                    request.approvers.to_json(),
                    int(request.offer_always),
                    request.status.value,
                    request.decided_by_id,
                    request.decided_by_name,
                    request.decided_at,
                    request.created_at,
                    request.expires_at,
                    request.card_id,
                    request.allow_subject,
                    request.caution,
                ),
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

    async def get_approval(self: Db, approval_id: str) -> ApprovalRequest | None:
        async with self.db.execute(
            f"SELECT {_APPROVAL_COLUMNS} FROM approvals WHERE id = ?", (approval_id,)
        ) as cur:
            row = await cur.fetchone()
        return _approval(row) if row else None

    async def approvals_for(
        self: Db, key: str, call_ids: Sequence[str]
    ) -> dict[str, ApprovalRequest]:
        """The thread's approval requests for these calls, by call id."""
        if not call_ids:
            return {}
        marks = ", ".join("?" * len(call_ids))
        async with self.db.execute(
            f"SELECT {_APPROVAL_COLUMNS} FROM approvals WHERE key = ? AND call_id IN ({marks})",
            (key, *call_ids),
        ) as cur:
            rows = await cur.fetchall()
        found = [_approval(r) for r in rows]
        return {a.call_id: a for a in found}

    async def decide_approval(
        self: Db,
        approval_id: str,
        status: ApprovalStatus,
        by_id: str | None,
        by_name: str | None,
        now: float,
    ) -> bool:
        """Record a decision once: only a pending request changes (and, unless this is the
        expiry itself, only before it expires). Returns whether this call changed it."""
        async with self.transaction() as db:
            cur = await db.execute(
                "UPDATE approvals SET status = ?, decided_by_id = ?, decided_by_name = ?,"
                " decided_at = ? WHERE id = ? AND status = 'pending' AND (? OR expires_at > ?)",
                (
                    status.value,
                    by_id,
                    by_name,
                    now,
                    approval_id,
                    status is ApprovalStatus.EXPIRED,
                    now,
                ),
            )
            if cur.rowcount != 1:
                return False
            await db.execute(
                f"INSERT INTO audit ({_AUDIT_COLUMNS}) SELECT ?, key, ?, tool, args_hash, ?, ?, id, ''"
                " FROM approvals WHERE id = ?",
                (now, status.value, by_id or "", by_name or "", approval_id),
            )
            return True

    async def pending_approvals(
        self: Db, within: str, now: float, limit: int = 100
    ) -> list[ApprovalRequest]:
        exact, under = keys_within(within)
        async with self.db.execute(
            f"SELECT {_APPROVAL_COLUMNS} FROM approvals WHERE status = 'pending' AND expires_at > ?"
            " AND (key = ? OR substr(key, 1, ?) = ?) ORDER BY expires_at, id LIMIT ?",
            (now, exact, len(under), under, limit),
        ) as cur:
            return [_approval(r) for r in await cur.fetchall()]

    async def set_approval_card(self: Db, approval_id: str, card_id: str) -> None:
        async with self.transaction() as db:
            await db.execute(
                "UPDATE approvals SET card_id = ? WHERE id = ?", (card_id, approval_id)
            )

    async def claim_notice(self: Db, request: ApprovalRequest, stage: str, now: float) -> bool:
        async with self.transaction() as db:
            cur = await db.execute(
                "INSERT INTO approval_notices (approval_id, stage, at) VALUES (?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                (request.id, stage, now),
            )
            if cur.rowcount != 1:
                return False
            await _audit(db, _noticed(request, stage, now))
            return True

    async def add_allow_rule(self: Db, rule: AllowRule) -> None:
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO allow_rules (id, scope, tool, covers, created_by, created_by_name,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    rule.id,
                    rule.scope,
                    rule.tool,
                    json.dumps(sorted(rule.covers)),
                    rule.created_by,
                    rule.created_by_name,
                    rule.created_at,
                ),
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

    async def allow_rule_for(self: Db, scope: str, tool: str, person: str) -> AllowRule | None:
        async with self.db.execute(
            f"SELECT {_RULE_COLUMNS} FROM allow_rules WHERE scope = ? AND tool = ? ORDER BY created_at",
            (scope, tool),
        ) as cur:
            rules = [_rule(r) for r in await cur.fetchall()]
        return next((r for r in rules if person in r.covers), None)

    async def allow_rules(self: Db, within: str = "") -> list[AllowRule]:
        exact, under = keys_within(within)
        async with self.db.execute(
            f"SELECT {_RULE_COLUMNS} FROM allow_rules WHERE scope = ?"
            " OR substr(scope, 1, ?) = ? ORDER BY created_at",
            (exact, len(under), under),
        ) as cur:
            return [_rule(r) for r in await cur.fetchall()]

    async def revoke_allow_rule(
        self: Db, rule_id: str, by: str, by_name: str, now: float
    ) -> AllowRule | None:
        async with self.transaction() as db:
            async with db.execute(
                f"SELECT {_RULE_COLUMNS} FROM allow_rules WHERE id = ?", (rule_id,)
            ) as cur:
                row = await cur.fetchone()
            if row is None:
                return None
            rule = _rule(row)
            await db.execute("DELETE FROM allow_rules WHERE id = ?", (rule_id,))
            await _audit(
                db,
                AuditEntry(
                    now,
                    rule.scope,
                    "rule revoked",
                    rule.tool,
                    actor_id=by,
                    actor_name=by_name,
                    detail=f"rule {rule.id}",
                ),
            )
        return rule

    async def record_audit(self: Db, entry: AuditEntry) -> None:
        async with self.transaction() as db:
            await _audit(db, entry)

    async def audit_trail(
        self: Db, *, within: str = "", since: float = 0.0, limit: int = 1000
    ) -> list[AuditEntry]:
        exact, under = keys_within(within)
        async with self.db.execute(
            f"SELECT {_AUDIT_COLUMNS} FROM audit WHERE (key = ? OR substr(key, 1, ?) = ?)"
            " AND at >= ? ORDER BY seq LIMIT ?",
            (exact, len(under), under, since, limit),
        ) as cur:
            return [AuditEntry(*row) for row in await cur.fetchall()]


def _noticed(request: ApprovalRequest, stage: str, now: float) -> AuditEntry:
    return AuditEntry(
        now,
        request.key,
        "notified",
        request.tool,
        request.args_hash,
        approval_id=request.id,
        detail=stage,
    )


_RULE_COLUMNS = "id, scope, tool, covers, created_by, created_by_name, created_at"
_AUDIT_COLUMNS = "at, key, event, tool, args_hash, actor_id, actor_name, approval_id, detail"


def _rule(row: Sequence[Any]) -> AllowRule:
    return AllowRule(row[0], row[1], row[2], frozenset(json.loads(row[3])), row[4], row[5], row[6])


async def _audit(db: aiosqlite.Connection, entry: AuditEntry) -> None:
    await db.execute(
        f"INSERT INTO audit ({_AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            entry.at,
            entry.key,
            entry.event,
            entry.tool,
            entry.args_hash,
            entry.actor_id,
            entry.actor_name,
            entry.approval_id,
            entry.detail,
        ),
    )
