"""Wakes what waits in this process for a request's decision: a call that waits for its
approval inline (a sub-agent's tool) rather than pausing its run. A decision made by another
worker reaches here as a nudge for the thread (:meth:`Decided.wake_all`, the waiters read the
store again); the waiters also read it again now and then."""

from __future__ import annotations

import asyncio


class Decided:
    def __init__(self) -> None:
        self._waiting: dict[str, set[asyncio.Event]] = {}

    def watch(self, approval_id: str) -> asyncio.Event:
        """An event set each time the request ``approval_id`` is decided or expires here."""
        event = asyncio.Event()
        self._waiting.setdefault(approval_id, set()).add(event)
        return event

    def unwatch(self, approval_id: str, event: asyncio.Event) -> None:
        found = self._waiting.get(approval_id)
        if found is not None:
            found.discard(event)
            if not found:
                del self._waiting[approval_id]

    def notify(self, approval_id: str) -> bool:
        """Wake the waiters of ``approval_id``; False when nothing here waits for it."""
        found = self._waiting.get(approval_id, ())
        for event in found:
            event.set()
        return bool(found)

    def wake_all(self) -> None:
        """Wake every waiter to read the store again (a decision may have been made elsewhere)."""
        for events in self._waiting.values():
            for event in events:
                event.set()
