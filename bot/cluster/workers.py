"""Work shared by several workers on one store: any event reaches the run it is for, and a dead
worker's threads are taken over.

A thread's run lives on the worker that holds its lease (:mod:`bot.cluster.leases`). An event for it
that reaches another worker travels through the database as a durable row and a ``NOTIFY``
nudge (:meth:`WorkStore.nudge`), with polling every ``poll_s`` as the fallback:

- a message is already a row (an *arrival*, kept until its session holds it): the holder steers
  it into the run; if the run has just ended, whoever is nudged answers it;
- a Stop is a Stop request row the holder reads;
- a click needs nothing: a paused run is data, and the clicking worker resumes it itself.

Each poll also looks for threads cut off mid-run whose lease is no longer live (their worker
died) and resumes them as after a restart (:mod:`bot.thread.recovery`), and for messages no live lease
will answer. A lease is no longer live once it expires, or at once when its worker's connection
that listens for nudges ends (:meth:`WorkStore.listen`: the kernel closes a dead process's
connections): a killed worker's threads are taken over at the next poll. This worker's own
listening connection ending (the database restarted, or the connection alone was cut), it listens
again on a new one and checks its leases at once (``recheck``): a thread taken over meanwhile
stops here. :class:`Alone` is the single process on its own store: nothing to share.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from bot.api.inbound import Author, ThreadKey
from bot.llm.messages import UserMessage
from bot.storage.leases import LeaseStore
from bot.thread.runs import Supervisor

log = logging.getLogger(__name__)

STRANDED_AFTER_S = 2.0
"""A message accepted this long ago that no live lease answers is picked up by any worker."""


class Listening(Protocol):
    @property
    def alive(self) -> bool: ...

    async def close(self) -> None: ...


@runtime_checkable
class WorkStore(LeaseStore, Protocol):
    """What a store shared by workers keeps for them (PostgreSQL)."""

    async def orphans(self, limit: int = 100) -> list[ThreadKey]:
        """Threads cut off mid-run whose lease is not live."""
        ...

    async def stranded(self, older_than_s: float, limit: int = 100) -> list[ThreadKey]:
        """Threads with messages accepted more than ``older_than_s`` ago (on the store's clock,
        not a worker's) and no live lease."""
        ...

    async def arrivals_of(
        self, keys: Sequence[ThreadKey]
    ) -> list[tuple[ThreadKey, UserMessage]]: ...

    async def is_arrival(self, event_id: str) -> bool: ...

    async def request_stop(self, key: ThreadKey, run_id: str, actor: Author) -> None: ...

    async def take_stop_requests(
        self, keys: Sequence[ThreadKey]
    ) -> list[tuple[ThreadKey, str, Author]]: ...

    async def nudge(self, key: ThreadKey) -> None: ...

    async def listen(
        self, heard: Callable[[ThreadKey], None], owner: str, ended: Callable[[], None]
    ) -> Listening:
        """Hear the nudges (``heard(key)``) on a connection of its own that holds ``owner``'s
        presence while it lives: when it ends (the worker's process died), the owner's leases
        are no longer live. ``ended()`` when it ends."""
        ...

    async def lease_holders(self, keys: Sequence[ThreadKey]) -> dict[ThreadKey, str]: ...

    async def is_present(self, owner: str) -> bool:
        """Whether ``owner`` is registered and holds its presence (else the leases it takes are
        only live until they expire)."""
        ...


def worker_id() -> str:
    """This process's name among the workers: host, process id and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class Alone:
    """One process on its own store: every event is already where its run is."""

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def nudge(self, key: ThreadKey) -> None:
        return None

    async def answered(self, message: UserMessage) -> bool:
        return False

    async def stop_elsewhere(self, key: ThreadKey, run_id: str | None, actor: Author) -> bool:
        return False


Place = Callable[[ThreadKey, UserMessage], object]
"""Give an accepted message its place in its thread (a worker that did not accept it)."""
Recover = Callable[[ThreadKey], object]
"""Resume a thread cut off mid-run, as after a restart."""


class Workers:
    """This worker's part: hearing nudges, polling, handing events to the runs it holds, and
    picking up what no live worker will."""

    def __init__(
        self,
        store: WorkStore,
        owner: str,
        supervisor: Supervisor,
        *,
        poll_s: float,
        busy: Callable[[ThreadKey], bool],
        place: Place,
        recover: Recover,
        wake: Callable[[], None] = lambda: None,
        recheck: Callable[[], None] = lambda: None,
        heard: Callable[[ThreadKey], None] = lambda key: None,
    ) -> None:
        self.store = store
        self.owner = owner
        self._supervisor = supervisor
        self._poll_s = poll_s
        self._busy = busy
        self._place = place
        self._recover = recover
        self._wake_waiters = wake
        """Wakes the calls of runs held here that wait inline for a decision (made elsewhere)."""
        self._heard_key = heard
        """Told every key nudged (a form answered elsewhere may be for a call waiting here)."""
        self._recheck = recheck
        """Renews this worker's leases now (those another worker took over meanwhile stop here)."""
        self._ended = False
        self._nudged: set[ThreadKey] = set()
        self._wake = asyncio.Event()
        self._listening: Listening | None = None
        self._task: asyncio.Task[None] | None = None
        self._placing: set[str] = set()

    async def start(self) -> None:
        await self._listen()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._listening is not None:
            await self._listening.close()
            self._listening = None

    # --- what the core asks ---

    async def nudge(self, key: ThreadKey) -> None:
        """A message for ``key`` was accepted here while another worker holds the thread."""
        await self.store.nudge(key)

    async def answered(self, message: UserMessage) -> bool:
        """Whether the accepted ``message`` is in its session already (another worker took it)."""
        return message.event_id is not None and not await self.store.is_arrival(message.event_id)

    async def stop_elsewhere(self, key: ThreadKey, run_id: str | None, actor: Author) -> bool:
        """Ask the worker that holds ``key`` to stop its run; False when none does."""
        holder = (await self.store.lease_holders([key])).get(key)
        if holder is None or holder == self.owner:
            return False
        await self.store.request_stop(key, run_id or "", actor)
        return True

    # --- the loop ---

    async def _listen(self) -> None:
        again = self._listening is not None
        try:
            self._listening = await self.store.listen(self._heard, self.owner, self._end)
        except Exception as exc:  # polling still finds everything, only later
            log.warning("cannot listen for other workers' nudges (polling instead): %s", exc)
            return
        if again:  # this worker looked gone meanwhile: its threads may have been taken over
            self._recheck()

    async def _stay_present(self) -> None:
        """Listen again when the listening connection ended, or when this worker is not present
        while its connection seems alive here (its lock lost on the way: a pooler's connection
        recycled): other workers would take its threads over at every look."""
        if self._listening is not None and self._listening.alive:
            if await self.store.is_present(self.owner):
                return
            log.warning("this worker was taken for gone; registering again")
            await self._listening.close()
        await self._listen()

    def _end(self) -> None:
        """The listening connection ended: listen again at once, not at the next poll."""
        self._ended = True
        self._wake.set()

    def _heard(self, key: ThreadKey) -> None:
        if key in self._supervisor.active:  # a decision elsewhere may be for a call waiting here
            self._wake_waiters()
        self._heard_key(key)
        self._nudged.add(key)
        self._wake.set()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        next_full = loop.time()
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, next_full - loop.time())):
                    await self._wake.wait()
            self._wake.clear()
            nudged, self._nudged = self._nudged, set()
            full = loop.time() >= next_full
            if full:
                next_full = loop.time() + self._poll_s
            ended, self._ended = self._ended, False
            try:
                if full or ended:
                    await self._stay_present()
                await self.look(nudged, full=full)
            except Exception as exc:  # the database away for a moment: the next poll tries again
                log.warning("looking for other workers' events failed: %s", exc)

    async def look(self, nudged: set[ThreadKey], *, full: bool) -> None:
        """Hand the events waiting for this worker's runs to them; with ``full``, also pick up
        what no live worker will."""
        active = list(self._supervisor.active)
        if active:
            for key, run_id, actor in await self.store.take_stop_requests(active):
                self._supervisor.stop(key, actor, run_id or None)
            for key, message in await self.store.arrivals_of(active):
                if not await self._supervisor.steer(key, message):
                    self._pick(key, message)
        others = [key for key in nudged if key not in self._supervisor.active]
        for key, message in await self.store.arrivals_of(others):
            self._pick(key, message)
        if not full:
            return
        for key in await self.store.orphans():
            if not self._busy(key):
                log.warning("taking over %s: the worker that ran it is gone", key)
                self._recover(key)
        stranded = await self.store.stranded(STRANDED_AFTER_S)
        for key, message in await self.store.arrivals_of(stranded):
            self._pick(key, message)

    def _pick(self, key: ThreadKey, message: UserMessage) -> None:
        event_id = message.event_id or ""
        if event_id in self._placing:
            return
        self._placing.add(event_id)
        work = self._place(key, message)
        if isinstance(work, asyncio.Future):
            work.add_done_callback(lambda _: self._placing.discard(event_id))
        else:
            self._placing.discard(event_id)
