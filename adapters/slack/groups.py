"""Slack user groups as approval roles: ``slack:group:{usergroup id}``.

Only the groups the configuration names (``approvers.roles``) are read, with
``usergroups.users.list`` (scope ``usergroups:read``), and only when someone clicks. Members of a
group are kept for ``ttl`` seconds, so someone removed from a group loses its approvals within a
minute; concurrent lookups of one group share one call. When Slack cannot say (missing scope, rate
limited, unknown group), nobody counts as a member: the decision is refused, never granted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from adapters.slack.lookups import KeptLookups
from bot.api.kit import Clock
from bot.config import ApproversSettings, Settings
from bot.errors import SurfaceError

log = logging.getLogger(__name__)

PREFIX = "slack:group:"
TTL_S = 60.0
FAILED_TTL_S = 10.0
Members = Callable[[str], Awaitable[frozenset[str]]]


def configured_groups(settings: Settings) -> frozenset[str]:
    """The ids of the Slack user groups the configuration names anywhere: as approvers, in
    ``[access]`` or in a tool's people lists."""
    tools = [
        *settings.tools.values(),
        *(t for c in settings.channels.values() for t in c.tools.values()),
    ]
    named: list[ApproversSettings | None] = [t.approvers for t in tools]
    named.extend(c.approvers for c in settings.channels.values())
    roles: list[str] = [role for a in named if a is not None for role in a.roles]
    for people in (settings.access, *tools):
        roles.extend([*people.roles, *people.deny_roles])
    return frozenset(r.removeprefix(PREFIX) for r in roles if r.startswith(PREFIX))


class UserGroups:
    def __init__(
        self, members: Members, groups: frozenset[str], clock: Clock, *, ttl: float = TTL_S
    ):
        self._groups = sorted(groups)
        self._members = KeptLookups(
            members,
            _unreadable,
            clock,
            ttl=ttl,
            failed_ttl=FAILED_TTL_S,
            capacity=max(1, len(groups)),
        )

    async def roles_of(self, user_id: str) -> frozenset[str]:
        """``slack:group:{id}`` for each configured group ``user_id`` (``U…``) belongs to."""
        if not self._groups:
            return frozenset()
        found = await asyncio.gather(*(self._members.get(g) for g in self._groups))
        return frozenset(
            f"{PREFIX}{group}"
            for group, members in zip(self._groups, found, strict=True)
            if user_id in members
        )


def _unreadable(group: str, error: SurfaceError) -> frozenset[str]:
    log.warning(
        "could not read the members of Slack user group %s (%s); nobody counts as a member. "
        "Approvers by group need the usergroups:read scope",
        group,
        error,
    )
    return frozenset()
