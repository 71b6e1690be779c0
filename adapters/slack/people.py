"""Who a Slack user is (their display name, the user groups they belong to) and what a channel
is called, each looked up with the Web API and kept for a while.

- :class:`KeptLookups`: an answer is kept for ``ttl`` seconds, a failure's stand-in for
  ``failed_ttl`` (asked again sooner), in a least-recently-used cache of ``capacity`` entries;
  concurrent lookups of one key share one call.
- :class:`DisplayNames`: names from ``users.info``, kept six hours (renames show up eventually).
  When Slack cannot answer (rate limited, missing ``users:read``), the user id stands in for a
  short while.
- :class:`UserGroups`: Slack user groups as approval roles, ``slack:group:{usergroup id}``. Only
  the groups the configuration names (``approvers.roles`` and ``escalate_to``, ``[access]``, a
  tool's people lists)
  are read, with ``usergroups.users.list`` (scope ``usergroups:read``), and only when someone
  clicks. Members are kept a minute, so someone removed from a group loses its approvals within
  a minute. When Slack cannot say (missing scope, rate limited, unknown group), nobody counts as
  a member: the decision is refused, never granted.
- :class:`ChannelNames`: a channel's name from ``conversations.info`` (scope ``channels:read``,
  ``groups:read`` for private ones), kept six hours, for the model's note of where it is. When
  Slack cannot say, the name is unknown (None) and the note names no channel.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from bot.api.kit import Clock
from bot.config import ApproversSettings, Settings
from bot.errors import SurfaceError

log = logging.getLogger(__name__)

V = TypeVar("V")


class KeptLookups(Generic[V]):
    def __init__(
        self,
        lookup: Callable[[str], Awaitable[V]],
        failed: Callable[[str, SurfaceError], V],
        clock: Clock,
        *,
        ttl: float,
        failed_ttl: float,
        capacity: int,
    ) -> None:
        """``failed(key, error)`` is the stand-in answer when the lookup raised."""
        self._lookup = lookup
        self._failed = failed
        self._clock = clock
        self._ttl = ttl
        self._failed_ttl = failed_ttl
        self._capacity = capacity
        self._cache: OrderedDict[str, tuple[V, float]] = OrderedDict()
        self._pending: dict[str, asyncio.Future[V]] = {}

    def __len__(self) -> int:
        return len(self._cache)

    async def get(self, key: str) -> V:
        hit = self._cache.get(key)
        if hit is not None and hit[1] > self._clock.monotonic():
            self._cache.move_to_end(key)
            return hit[0]
        pending = self._pending.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[V] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            value, ttl = await self._lookup(key), self._ttl
        except SurfaceError as exc:
            value, ttl = self._failed(key, exc), self._failed_ttl
        except BaseException as exc:  # cancelled (shutting down) or a bug: nothing is kept
            del self._pending[key]
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(exc)
                future.exception()  # the waiters, if any, see it; it is raised here too
            raise
        self._remember(key, value, ttl)
        del self._pending[key]
        future.set_result(value)
        return value

    def _remember(self, key: str, value: V, ttl: float) -> None:
        self._cache[key] = (value, self._clock.monotonic() + ttl)
        self._cache.move_to_end(key)
        while len(self._cache) > self._capacity:
            self._cache.popitem(last=False)


Lookup = Callable[[str], Awaitable[dict[str, Any]]]
CAPACITY = 5000
NAME_TTL_S = 6 * 3600.0
NAME_FAILED_TTL_S = 60.0
NAME_CHARS = 80


def display_name(user: dict[str, Any], fallback: str) -> str:
    """The name Slack shows for ``user`` (a ``users.info`` user object)."""
    raw = user.get("profile")
    profile: dict[str, Any] = raw if isinstance(raw, dict) else {}
    for candidate in (
        profile.get("display_name"),
        profile.get("real_name"),
        user.get("real_name"),
        user.get("name"),
    ):
        if isinstance(candidate, str) and candidate.strip():
            name = " ".join(candidate.split())  # no newlines or tabs in a speaker's name
            return name[:NAME_CHARS]
    return fallback


class DisplayNames:
    def __init__(
        self, lookup: Lookup, clock: Clock, *, capacity: int = CAPACITY, ttl: float = NAME_TTL_S
    ):
        async def name_of(user_id: str) -> str:
            return display_name(await lookup(user_id), user_id)

        self._names = KeptLookups(
            name_of, _unknown, clock, ttl=ttl, failed_ttl=NAME_FAILED_TTL_S, capacity=capacity
        )

    def __len__(self) -> int:
        return len(self._names)

    async def name(self, user_id: str) -> str:
        return await self._names.get(user_id)


def _unknown(user_id: str, error: SurfaceError) -> str:
    log.info("could not look up the name of %s: %s", user_id, error)
    return user_id  # the id stands in for a short while


class ChannelNames:
    def __init__(
        self,
        lookup: Callable[[str], Awaitable[str | None]],
        clock: Clock,
        *,
        capacity: int = CAPACITY,
    ) -> None:
        self._names = KeptLookups(
            lookup, _unnamed, clock, ttl=NAME_TTL_S, failed_ttl=NAME_FAILED_TTL_S, capacity=capacity
        )

    async def name(self, channel_id: str) -> str | None:
        return await self._names.get(channel_id)


def _unnamed(channel_id: str, error: SurfaceError) -> str | None:
    log.info("could not look up the name of channel %s: %s", channel_id, error)
    return None


PREFIX = "slack:group:"
GROUP_TTL_S = 60.0
GROUP_FAILED_TTL_S = 10.0
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
    roles: list[str] = [role for a in named if a is not None for role in (*a.roles, *a.escalate_to)]
    for people in (settings.access, *tools):
        roles.extend([*people.roles, *people.deny_roles])
    return frozenset(r.removeprefix(PREFIX) for r in roles if r.startswith(PREFIX))


class UserGroups:
    def __init__(
        self, members: Members, groups: frozenset[str], clock: Clock, *, ttl: float = GROUP_TTL_S
    ):
        self._groups = sorted(groups)
        self._members = KeptLookups(
            members,
            _unreadable,
            clock,
            ttl=ttl,
            failed_ttl=GROUP_FAILED_TTL_S,
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

    async def members(self, group_id: str) -> frozenset[str]:
        """The user ids in a user group (``S…``), kept like those :meth:`roles_of` reads."""
        return await self._members.get(group_id)


def _unreadable(group: str, error: SurfaceError) -> frozenset[str]:
    log.warning(
        "could not read the members of Slack user group %s (%s); nobody counts as a member. "
        "Approvers by group need the usergroups:read scope",
        group,
        error,
    )
    return frozenset()
