"""Each platform delivery is answered once, and none is lost.

A message is *accepted* — its delivery id recorded and the message kept as an arrival, in one
transaction, with the files it names, not downloaded yet — before the platform is
acknowledged; the files are fetched when its turn in the thread comes (:mod:`bot.files.pending`). The arrival is done when the message is in
its thread's session (the session's write removes it, in the same transaction); arrivals still
there after a restart are answered then. Delivery ids are kept for two days, then forgotten.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from bot.api.inbound import Attachment, ThreadKey
from bot.infra.clock import Clock
from bot.llm.messages import UserMessage
from bot.scheduler.jobs import Job
from bot.scheduler.service import Scheduler

log = logging.getLogger(__name__)

RETENTION_S = 48 * 3600
PURGE_JOB = "purge_deliveries"
PURGE_EVERY_S = 3600.0


class DeliveryStore(Protocol):
    async def first_delivery(self, event_id: str, now: float) -> bool:
        """True the first time ``event_id`` is seen; False for a redelivery."""
        ...

    async def accept(
        self,
        key: ThreadKey,
        message: UserMessage,
        now: float,
        files: Sequence[Attachment] = (),
    ) -> bool:
        """Record ``message.event_id`` and keep ``message`` as an arrival for ``key``, with the
        ``files`` it names (not downloaded yet), in one transaction; False (nothing kept) for a
        redelivery."""
        ...

    async def arrival_files(self, event_id: str) -> tuple[Attachment, ...]:
        """The files the arrival ``event_id`` names (none once it is in its session)."""
        ...

    async def arrivals(self, limit: int = 1000) -> list[tuple[ThreadKey, UserMessage]]:
        """Accepted messages not yet in their session, in the order they were accepted."""
        ...

    async def end_arrival(self, event_id: str) -> None:
        """The arrival ``event_id`` is done without a write of its session (an edit that
        changes nothing); its delivery id stays recorded."""
        ...

    async def purge_deliveries(self, before: float) -> int:
        """Forget event ids seen before ``before``; returns how many."""
        ...


class Deliveries:
    def __init__(self, store: DeliveryStore, clock: Clock, scheduler: Scheduler) -> None:
        self._store = store
        self._clock = clock
        self._scheduler = scheduler
        self._accepted_here: set[str] | None = set()
        """Event ids this process accepted before :meth:`left_over` ran (its own work, never a
        restart's leftover); None afterwards."""
        scheduler.handle(PURGE_JOB, self._purge_job)

    async def first(self, event_id: str) -> bool:
        return await self._store.first_delivery(event_id, self._clock.now())

    async def accept(
        self, key: ThreadKey, message: UserMessage, files: Sequence[Attachment] = ()
    ) -> bool:
        if message.event_id and self._accepted_here is not None:
            self._accepted_here.add(message.event_id)  # before the write: left_over may read it
        return await self._store.accept(key, message, self._clock.now(), files)

    async def files_of(self, message: UserMessage) -> tuple[Attachment, ...]:
        """The files ``message`` was accepted with, still to be fetched."""
        if not message.event_id:
            return ()
        return await self._store.arrival_files(message.event_id)

    async def end(self, message: UserMessage) -> None:
        """``message``'s arrival is done, though its session does not hold it (an edit that
        changes nothing)."""
        if message.event_id:
            await self._store.end_arrival(message.event_id)

    async def left_over(self) -> list[tuple[ThreadKey, UserMessage]]:
        """Messages accepted before a restart and not in their session yet (not those this
        process accepted: an adapter may accept while the restart is being mended)."""
        found = await self._store.arrivals()
        ours, self._accepted_here = self._accepted_here or set(), None
        return [(key, m) for key, m in found if m.event_id not in ours]

    async def start(self) -> int:
        """Forget what is old now and purge every hour from now on; returns how many were purged."""
        purged = await self._purge()
        due = self._clock.now() + PURGE_EVERY_S
        await self._scheduler.schedule(Job(PURGE_JOB, PURGE_JOB, due, interval_s=PURGE_EVERY_S))
        return purged

    async def _purge(self) -> int:
        return await self._store.purge_deliveries(self._clock.now() - RETENTION_S)

    async def _purge_job(self, job: Job) -> None:
        log.info("purged %d old delivery ids", await self._purge())
