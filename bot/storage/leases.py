"""One writer per thread across workers: a lease per thread with a fencing token.

A worker takes a thread's lease before a run and renews it while the run goes on. Time is the
database's: a lease is taken for ``ttl_s`` seconds of its clock, so a worker whose own clock is
off still cannot hold a lease another holds. Each take gives a new token, greater than any
before it; writes made through :meth:`LeaseStore.sessions_under` carry the token and are refused
(:class:`bot.errors.LeaseLost`, nothing written) once the lease has been taken by another worker
or released. A holder whose lease expired keeps writing until someone else takes it over (its
token is still the newest), and may renew it until then.

Only the store side exists: nothing takes a lease yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bot.api.inbound import ThreadKey
from bot.sessions.store import SessionStore


@dataclass(frozen=True, slots=True)
class Lease:
    key: ThreadKey
    owner: str
    """The worker that holds it (any id unique among the workers)."""
    token: int
    """The fencing token: greater than every token given before it for any thread."""
    expires_at: float
    """When it expires, in seconds since the epoch on the database's clock (not ours)."""


class LeaseStore(Protocol):
    async def take_lease(self, key: ThreadKey, owner: str, ttl_s: float) -> Lease | None:
        """The thread's lease for ``ttl_s`` seconds, with a new token, when nobody else holds an
        unexpired one (free, expired, released, or already ``owner``'s); otherwise None."""
        ...

    async def renew_lease(self, lease: Lease, ttl_s: float) -> Lease | None:
        """``lease`` extended to ``ttl_s`` seconds from now (same token), or None when it has
        been taken by another worker or released."""
        ...

    async def release_lease(self, lease: Lease) -> bool:
        """Give the lease up (anyone may take it at once); False when it was no longer held."""
        ...

    async def lease_of(self, key: ThreadKey) -> Lease | None:
        """The thread's lease as it stands (possibly expired or released), or None if never taken."""
        ...

    def sessions_under(self, lease: Lease) -> SessionStore:
        """The sessions, whose writes (append, replace, save state) for ``lease.key`` are refused
        with :class:`bot.errors.LeaseLost` once ``lease`` is no longer the thread's."""
        ...
