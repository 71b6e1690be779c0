"""Whether a call asks first (:func:`needs_approval`), the hash that pins a call's arguments,
and each tool's approval settings resolved for a thread: the most specific channel section
first, then the global ``[tools.NAME]``, then what the tool says of the call at hand
(:attr:`Tool.approval_for`), then the tool's own default. Pure: no I/O. Who may decide is
:meth:`bot.policy.who.Policy.decide`."""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel

from bot.approvals.models import Approvers
from bot.config import ApproversSettings, Settings, ToolSettings
from bot.policy.who import tool_sections
from bot.tools.base import Approval, Tool


class ToolRules:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    def _tool_settings(self, key: str, tool: str) -> list[ToolSettings]:
        return tool_sections(self._settings, key, tool)

    def mode(self, key: str, tool: Tool, args: BaseModel | None = None) -> Approval:
        """When a call of ``tool`` in thread ``key`` asks; with ``args``, for that very call."""
        for item in self._tool_settings(key, tool.name):
            if item.approval is not None:
                return item.approval
        if args is not None and tool.approval_for is not None:
            found = tool.approval_for(args)
            if found is not None:
                return found
        return tool.approval

    @staticmethod
    def subject(tool: Tool, args: BaseModel | None) -> str | None:
        """What an "Always allow" rule made on this call covers besides the tool (an origin),
        or None: the whole tool."""
        if args is None or tool.rule_subject is None:
            return None
        return tool.rule_subject(args)

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
        users = {*chosen.users, *(self._settings.access.admins if chosen.admins else ())}
        escalate = frozenset(chosen.escalate_to)
        roles = frozenset(e for e in escalate if is_role(e))
        return Approvers(
            chosen.requester,
            frozenset(users),
            frozenset(chosen.roles),
            chosen.anyone,
            escalate_users=escalate - roles,
            escalate_roles=roles,
            escalate_after=chosen.escalate_after,
            notify=chosen.notify,
        )

    def offer_always(self, key: str, tool: Tool, mode: Approval) -> bool:
        for item in self._tool_settings(key, tool.name):
            if item.offer_always is not None:
                return item.offer_always
        return mode == "ask" and not tool.executes


ROLE_MARKS = (":role:", ":group:")
"""What a role's id holds (``discord:role:123``, ``slack:group:S123``); a user's does not."""


def is_role(person: str) -> bool:
    """Whether an id names a role or user group rather than a user."""
    return any(mark in person for mark in ROLE_MARKS)


def needs_approval(mode: Approval, *, allowed_here: bool) -> bool:
    """``always`` asks every time; ``ask`` unless the tool was allowed in this channel."""
    if mode == "always":
        return True
    if mode == "ask":
        return not allowed_here
    return False


def arguments_hash(arguments: str) -> str:
    """A hash of the exact arguments (canonical JSON when they parse, else the raw text)."""
    try:
        canonical = json.dumps(json.loads(arguments), sort_keys=True, separators=(",", ":"))
    except ValueError:
        canonical = arguments
    return hashlib.sha256(canonical.encode()).hexdigest()
