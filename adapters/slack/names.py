"""People's display names, looked up once with ``users.info`` and kept in a bounded cache.

A name is kept for ``ttl`` seconds (renames show up eventually) in a least-recently-used cache
of ``capacity`` entries. Concurrent lookups of one user share one call. When Slack cannot answer
(rate limited, missing ``users:read``), the user id stands in for a short while.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from adapters.slack.lookups import KeptLookups
from bot.api.kit import Clock
from bot.errors import SurfaceError

log = logging.getLogger(__name__)

Lookup = Callable[[str], Awaitable[dict[str, Any]]]
CAPACITY = 5000
TTL_S = 6 * 3600.0
FAILED_TTL_S = 60.0
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
        self, lookup: Lookup, clock: Clock, *, capacity: int = CAPACITY, ttl: float = TTL_S
    ):
        async def name_of(user_id: str) -> str:
            return display_name(await lookup(user_id), user_id)

        self._names = KeptLookups(
            name_of, _unknown, clock, ttl=ttl, failed_ttl=FAILED_TTL_S, capacity=capacity
        )

    def __len__(self) -> int:
        return len(self._names)

    async def name(self, user_id: str) -> str:
        return await self._names.get(user_id)


def _unknown(user_id: str, error: SurfaceError) -> str:
    log.info("could not look up the name of %s: %s", user_id, error)
    return user_id  # the id stands in for a short while
