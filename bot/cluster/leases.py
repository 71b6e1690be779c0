"""One writer per thread across workers: the thread's lease is held around every piece of work
that writes its session (a run, a resume, a recovery, a reset), inside the thread's own lock.

On one process (SQLite) the lock is enough: :class:`OneProcess` holds nothing. On a shared
store, :class:`ThreadLeases` takes the lease (:mod:`bot.storage.leases`, the database's clock),
renews it while the work goes on, and releases it after; :class:`LeasedSessions` makes every
write of a session carry the token of the lease held on its thread, so a worker that lost the
lease (paused, partitioned, too slow to renew) writes nothing more: its work ends with
:class:`~bot.errors.LeaseLost`, which the holding block swallows after saying so in the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

from bot.api.inbound import ThreadKey
from bot.errors import LeaseLost
from bot.llm.messages import Message
from bot.sessions.model import RunState, Session
from bot.sessions.store import SessionStore
from bot.storage.leases import Lease, LeaseStore

log = logging.getLogger(__name__)

RETRY_S = 0.05
"""How often a worker that waits for a lease asks again (at first; it backs off to 0.5 s)."""


class Leasing(Protocol):
    def hold(self, key: ThreadKey, *, wait_s: float = 0.0) -> AbstractAsyncContextManager[bool]:
        """``async with leasing.hold(key) as held:`` — inside the thread's lock: True while
        this worker may write the thread (waiting up to ``wait_s`` for another to let go);
        False when another worker holds it."""
        ...


class OneProcess:
    """One process on its own store: the thread's lock is all the holding there is."""

    @asynccontextmanager
    async def hold(self, key: ThreadKey, *, wait_s: float = 0.0) -> AsyncIterator[bool]:
        yield True


class ThreadLeases:
    """The leases this worker holds, each renewed every third of ``ttl_s`` while held.

    ``on_lost(key)`` is called when a renewal finds the lease taken over (the work in the
    thread must stop: its writes are refused from now on)."""

    def __init__(
        self,
        store: LeaseStore,
        owner: str,
        ttl_s: float,
        *,
        on_lost: Callable[[ThreadKey], None] = lambda key: None,
    ) -> None:
        self.store = store
        self.owner = owner
        self.ttl_s = ttl_s
        self.held: dict[ThreadKey, Lease] = {}
        self._on_lost = on_lost
        self._soon = asyncio.Event()

    @asynccontextmanager
    async def hold(self, key: ThreadKey, *, wait_s: float = 0.0) -> AsyncIterator[bool]:
        if key in self.held:
            raise RuntimeError(f"the lease on {key} is already held by this worker")
        lease = await self._take(key, wait_s)
        if lease is None:
            yield False
            return
        self.held[key] = lease
        renewing = asyncio.get_running_loop().create_task(self._renew(lease))
        try:
            yield True
        except LeaseLost as exc:
            log.warning(
                "another worker took %s over; this worker's work there stops (%s)", key, exc
            )
        finally:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing
            current = self.held.pop(key, None)
            if current is not None:
                try:
                    await self.store.release_lease(current)
                except Exception as exc:  # the database away: it expires by itself
                    log.warning("could not release the lease on %s: %s", key, exc)

    async def _take(self, key: ThreadKey, wait_s: float) -> Lease | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        pause = RETRY_S
        while True:
            lease = await self.store.take_lease(key, self.owner, self.ttl_s)
            if lease is not None or loop.time() + pause > deadline:
                return lease
            await asyncio.sleep(pause)
            pause = min(0.5, pause * 2)

    def check_now(self) -> None:
        """Renew every lease held now, not at its next third: one another worker took over
        meanwhile (this worker looked gone to it) is reported lost at once."""
        self._soon.set()
        self._soon = asyncio.Event()

    async def _renew(self, lease: Lease) -> None:
        """Renew until cancelled; a lease found taken over is dropped and reported."""
        loop = asyncio.get_running_loop()
        expires = loop.time() + self.ttl_s
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.ttl_s / 3):
                    await self._soon.wait()
            try:
                renewed = await self.store.renew_lease(lease, self.ttl_s)
            except Exception as exc:  # the database away for a moment: renewed next time
                if loop.time() < expires:
                    log.warning(
                        "could not renew the lease on %s (will try again): %s", lease.key, exc
                    )
                    continue
                renewed = None  # it has expired meanwhile: another worker may have it now
            if renewed is None:
                if self.held.get(lease.key) is lease:
                    del self.held[lease.key]
                log.warning("the lease on %s was lost", lease.key)
                self._on_lost(lease.key)
                return
            expires = loop.time() + self.ttl_s


class SharedSessions(SessionStore, LeaseStore, Protocol):
    """A store of sessions that also keeps their leases."""


class LeasedSessions:
    """The sessions of a shared store as this worker may write them: a write carries the
    token of the lease held on its thread, and is refused (:class:`LeaseLost`, nothing
    written) when none is held or the token is no longer the thread's."""

    def __init__(self, store: SharedSessions, leases: ThreadLeases) -> None:
        self._store = store
        self._leases = leases

    def _writer(self, key: ThreadKey) -> SessionStore:
        lease = self._leases.held.get(key)
        if lease is None:
            raise LeaseLost(f"this worker holds no lease on {key}")
        return self._store.sessions_under(lease)

    async def load_session(self, key: ThreadKey, now: float) -> Session:
        return await self._store.load_session(key, now)

    async def has_session(self, key: ThreadKey) -> bool:
        return await self._store.has_session(key)

    async def keys_in_state(self, state: RunState, limit: int = 1000) -> list[ThreadKey]:
        return await self._store.keys_in_state(state, limit)

    async def append_messages(self, session: Session, messages: Sequence[Message]) -> None:
        await self._writer(session.key).append_messages(session, messages)

    async def replace_messages(self, session: Session, messages: Sequence[Message]) -> None:
        await self._writer(session.key).replace_messages(session, messages)

    async def save_state(self, session: Session) -> None:
        await self._writer(session.key).save_state(session)
