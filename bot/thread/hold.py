"""Holding a thread: its place in this process's line, then its lease (with several workers, the
one worker that may write it), then its session read. Every piece of work on a thread — an
answer, a decision's resume, a repair after a restart, a command — takes the thread this way,
in this order, here and nowhere else."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from bot.api.inbound import ThreadKey
from bot.cluster.leases import Leasing
from bot.infra.clock import Clock
from bot.sessions.model import Session
from bot.sessions.store import SessionStore
from bot.thread.line import Place, ThreadLocks


@dataclass(frozen=True, slots=True)
class Holds:
    locks: ThreadLocks[ThreadKey]
    leases: Leasing
    sessions: SessionStore
    clock: Clock

    @asynccontextmanager
    async def session(
        self, key: ThreadKey, *, place: Place[ThreadKey] | None = None, wait_s: float = 0.0
    ) -> AsyncIterator[Session | None]:
        """``async with holds.session(key) as session:`` — the thread's session, held until the
        block ends; None when another worker holds the thread (after waiting ``wait_s`` for
        it). ``place``: a place in the line taken earlier (the next one otherwise)."""
        async with (
            place if place is not None else self.locks.hold(key),
            self.leases.hold(key, wait_s=wait_s) as held,
        ):
            yield await self.sessions.load_session(key, self.clock.now()) if held else None
