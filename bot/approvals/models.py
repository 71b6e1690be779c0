"""Approval requests and who may decide them: plain values, persisted by the store."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum


class ApprovalStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    EXPIRED = "expired"


class Choice(StrEnum):
    """What a click asks for."""

    APPROVE = "approve"
    DENY = "deny"
    ALWAYS = "always"
    """Approve, and allow this tool in this channel from now on without asking."""


@dataclass(frozen=True, slots=True)
class Approvers:
    """Who may decide: the person who started the run, listed users, holders of roles, anyone."""

    requester: bool = True
    users: frozenset[str] = frozenset()
    roles: frozenset[str] = frozenset()
    anyone: bool = False

    def to_json(self) -> str:
        return json.dumps(
            {
                "requester": self.requester,
                "users": sorted(self.users),
                "roles": sorted(self.roles),
                "anyone": self.anyone,
            }
        )

    @classmethod
    def from_json(cls, raw: str) -> Approvers:
        data = json.loads(raw)
        return cls(
            requester=bool(data.get("requester", True)),
            users=frozenset(data.get("users", ())),
            roles=frozenset(data.get("roles", ())),
            anyone=bool(data.get("anyone", False)),
        )

    def describe(self) -> str:
        if self.anyone:
            return "anyone in this channel"
        parts = ["the person who asked"] if self.requester else []
        if self.users:
            parts.append(f"{len(self.users)} listed user{'s' * (len(self.users) > 1)}")
        if self.roles:
            parts.append("members of " + ", ".join(sorted(self.roles)))
        return " or ".join(parts) or "nobody (check the configuration)"


@dataclass(slots=True)
class ApprovalRequest:
    id: str
    """Random and unguessable: it travels in the buttons."""
    key: str
    """The thread."""
    call_id: str
    """Our id of the tool call waiting for the decision."""
    tool: str
    arguments: str
    args_hash: str
    requester_id: str
    requester_name: str
    approvers: Approvers
    created_at: float
    expires_at: float
    offer_always: bool = False
    status: ApprovalStatus = ApprovalStatus.PENDING
    decided_by_id: str | None = None
    decided_by_name: str | None = None
    decided_at: float | None = None
    card_id: str | None = None

    @property
    def pending(self) -> bool:
        return self.status is ApprovalStatus.PENDING
