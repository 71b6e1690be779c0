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
    EXACT = "exact"
    """Approve, and allow this exact call (the same tool with the same arguments) in this
    channel from now on without asking."""


@dataclass(frozen=True, slots=True)
class Approvers:
    """Who may decide: the person who started the run, listed users, holders of roles, anyone;
    and, once ``escalate_after`` seconds have passed undecided, the escalation's people too."""

    requester: bool = True
    users: frozenset[str] = frozenset()
    roles: frozenset[str] = frozenset()
    anyone: bool = False
    escalate_users: frozenset[str] = frozenset()
    escalate_roles: frozenset[str] = frozenset()
    escalate_after: float | None = None
    notify: bool = True
    """Tell the approvers by a direct message when the person who asked may not decide."""
    names: tuple[tuple[str, str], ...] = ()
    """The names people see for the ids above (``slack:U1`` → ``Ann``), as the platform gave
    them when the request was made; an id without one is shown as it is."""

    def to_json(self) -> str:
        return json.dumps(
            {
                "requester": self.requester,
                "users": sorted(self.users),
                "roles": sorted(self.roles),
                "anyone": self.anyone,
                "escalate_users": sorted(self.escalate_users),
                "escalate_roles": sorted(self.escalate_roles),
                "escalate_after": self.escalate_after,
                "notify": self.notify,
                "names": dict(self.names),
            }
        )

    @classmethod
    def from_json(cls, raw: str) -> Approvers:
        data = json.loads(raw)
        after = data.get("escalate_after")
        names = data.get("names") or {}
        return cls(
            requester=bool(data.get("requester", True)),
            users=frozenset(data.get("users", ())),
            roles=frozenset(data.get("roles", ())),
            anyone=bool(data.get("anyone", False)),
            escalate_users=frozenset(data.get("escalate_users", ())),
            escalate_roles=frozenset(data.get("escalate_roles", ())),
            escalate_after=float(after) if isinstance(after, int | float) else None,
            notify=bool(data.get("notify", True)),
            names=tuple(sorted((str(k), str(v)) for k, v in names.items())),
        )

    @property
    def escalates(self) -> bool:
        return self.escalate_after is not None and bool(self.escalate_users or self.escalate_roles)

    def people(self) -> frozenset[str]:
        """Every user and role id named, the escalation's included (whose names are shown)."""
        return self.users | self.roles | self.escalate_users | self.escalate_roles

    def describe(self) -> str:
        """Who may decide before any escalation, in words, naming the people listed."""
        if self.anyone:
            return "anyone in this channel"
        parts = ["the person who asked"] if self.requester else []
        listed = self.named(self.users, self.roles)
        if listed:
            parts.append(listed)
        return " or ".join(parts) or "nobody (check the configuration)"

    def describe_escalation(self) -> str:
        """Who may decide once the request escalates, in words ("" when it does not)."""
        return self.named(self.escalate_users, self.escalate_roles) if self.escalates else ""

    def named(self, users: frozenset[str], roles: frozenset[str]) -> str:
        """``Ann, Bob or members of ops``: users by name, then roles, the first few."""
        shown = dict(self.names)
        people = sorted(shown.get(u, u) for u in users)
        groups = sorted(shown.get(r, r) for r in roles)
        words = _listed(people, SHOWN_NAMES)
        if groups:
            members = "members of " + _listed(groups, SHOWN_NAMES, "or")
            words = f"{words} or {members}" if words else members
        return words


SHOWN_NAMES = 6
"""People (and, apart, roles) a card names before it says how many more."""


def _listed(names: list[str], most: int, last: str = "or") -> str:
    if not names:
        return ""
    if len(names) > most:
        return ", ".join(names[:most]) + f" {last} {len(names) - most} more"
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + f" {last} {names[-1]}"


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
    allow_subject: str | None = None
    """What "Always allow" covers besides the tool, when finer than the whole tool: the
    origin (scheme, host and port) of a ``fetch_url`` call (see :attr:`rule_tool`)."""
    caution: str = ""
    """A warning the card shows about the tool (its MCP server marks it destructive)."""
    status: ApprovalStatus = ApprovalStatus.PENDING
    decided_by_id: str | None = None
    decided_by_name: str | None = None
    decided_at: float | None = None
    card_id: str | None = None

    @property
    def pending(self) -> bool:
        return self.status is ApprovalStatus.PENDING

    @property
    def escalates_at(self) -> float | None:
        """When the escalation's people may decide too (None: it does not escalate, or only
        after it expires)."""
        after = self.approvers.escalate_after
        if after is None or not self.approvers.escalates:
            return None
        at = self.created_at + after
        return at if at < self.expires_at else None

    def escalated(self, now: float) -> bool:
        at = self.escalates_at
        return at is not None and now >= at

    @property
    def rule_tool(self) -> str:
        """What an "Always allow" rule made on this request names: the tool, or
        ``tool:subject`` (``fetch_url:https://docs.python.org``)."""
        return rule_tool(self.tool, self.allow_subject)

    @property
    def exact_rule_tool(self) -> str:
        """What an "Always allow this exact call" rule made on this request names."""
        return exact_rule_tool(self.tool, self.args_hash)


def rule_tool(tool: str, subject: str | None) -> str:
    """The ``tool`` of an allow rule covering ``tool`` calls about ``subject`` (all: None)."""
    return f"{tool}:{subject}" if subject else tool


EXACT_MARK = "#"
"""Between the tool and the arguments' hash in an exact call's rule (never in a tool name)."""


def exact_rule_tool(tool: str, args_hash: str) -> str:
    """The ``tool`` of an allow rule covering only calls of ``tool`` whose arguments hash to
    ``args_hash`` (:func:`bot.approvals.rules.arguments_hash`)."""
    return f"{tool}{EXACT_MARK}{args_hash}"


@dataclass(frozen=True, slots=True)
class AllowRule:
    """ "Always allow here": ``tool`` runs without a card in ``scope`` (a channel), for the people
    it ``covers`` (the person whose request it was created on), until revoked. ``tool`` may be
    narrower than a tool: ``fetch_url:https://docs.python.org`` covers that scheme, host and port
    only; ``deploy#<sha256>`` covers only the calls with the arguments of that hash."""

    id: str
    scope: str
    tool: str
    covers: frozenset[str]
    created_by: str
    created_by_name: str
    created_at: float

    @property
    def exact(self) -> bool:
        """It covers one exact call (its tool with the same arguments), not every call."""
        return EXACT_MARK in self.tool

    def covered(self) -> str:
        """What it lets run, in words: ``deploy``, ``fetch_url on https://docs.python.org``,
        ``deploy with one exact set of arguments (sha256 1a2b3c4d5e6f)``."""
        if self.exact:
            tool, _, digest = self.tool.partition(EXACT_MARK)
            return f"{tool} with one exact set of arguments (sha256 {digest[:12]})"
        tool, sep, subject = self.tool.partition(":")
        return f"{tool} on {subject}" if sep else tool

    def describe(self) -> str:
        who = ", ".join(sorted(self.covers)) or "nobody"
        return f"{self.covered()} in {self.scope} for {who} (by {self.created_by_name})"


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One line of the approval audit trail."""

    at: float
    key: str
    event: str
    """``requested``, ``approved``, ``denied``, ``expired``, ``allowed by rule``,
    ``rule created``, ``rule revoked``, ``notified`` (direct messages sent to
    approvers; ``detail`` names the stage)."""
    tool: str
    args_hash: str = ""
    actor_id: str = ""
    actor_name: str = ""
    approval_id: str = ""
    detail: str = ""
