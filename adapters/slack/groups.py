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
from collections.abc import Awaitable, Callable, Iterable

from bot.clock import Clock
from bot.config import ApproversSettings, Settings
from bot.errors import SurfaceError

log = logging.getLogger(__name__)

PREFIX = "slack:group:"
TTL_S = 60.0
FAILED_TTL_S = 10.0
Members = Callable[[str], Awaitable[frozenset[str]]]


def configured_groups(settings: Settings) -> frozenset[str]:
    """The ids of the Slack user groups named as approvers, anywhere in the configuration."""
    named: list[ApproversSettings | None] = [t.approvers for t in settings.tools.values()]
    for channel in settings.channels.values():
        named.append(channel.approvers)
        named.extend(t.approvers for t in channel.tools.values())
    roles: Iterable[str] = (role for a in named if a is not None for role in a.roles)
    return frozenset(r.removeprefix(PREFIX) for r in roles if r.startswith(PREFIX))


class UserGroups:
    def __init__(self, members: Members, groups: frozenset[str], clock: Clock, *, ttl: float = TTL_S):
        self._members = members
        self._groups = sorted(groups)
        self._clock = clock
        self._ttl = ttl
        self._cache: dict[str, tuple[frozenset[str], float]] = {}
        self._pending: dict[str, asyncio.Future[frozenset[str]]] = {}

    async def roles_of(self, user_id: str) -> frozenset[str]:
        """``slack:group:{id}`` for each configured group ``user_id`` (``U…``) belongs to."""
        if not self._groups:
            return frozenset()
        found = await asyncio.gather(*(self._group(g) for g in self._groups))
        return frozenset(f"{PREFIX}{g}" for g, members in zip(self._groups, found, strict=True)
                         if user_id in members)

    async def _group(self, group: str) -> frozenset[str]:
        hit = self._cache.get(group)
        if hit is not None and hit[1] > self._clock.monotonic():
            return hit[0]
        pending = self._pending.get(group)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[frozenset[str]] = asyncio.get_running_loop().create_future()
        self._pending[group] = future
        members, ttl = frozenset[str](), FAILED_TTL_S
        try:
            members, ttl = await self._members(group), self._ttl
        except SurfaceError as exc:
            log.warning(
                "could not read the members of Slack user group %s (%s); nobody counts as a "
                "member. Approvers by group need the usergroups:read scope", group, exc,
            )
        finally:
            self._cache[group] = (members, self._clock.monotonic() + ttl)
            del self._pending[group]
            future.set_result(members)
        return members
