"""New connections of the pool through a database restart: a connection the pool opens (to
replace one the restart closed) is tried again while the server refuses or is still starting,
for up to ``wait_s``, so a write in a run waits out a restart instead of failing the run.

Only connecting is retried: nothing was sent yet, so nothing can happen twice. The wait is on
only once the store has opened (``waiting()`` is true): a database unreachable at start-up
stops the program at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import asyncpg

log = logging.getLogger(__name__)

PAUSE_S = 0.25
"""The first pause between attempts (doubling, at most ``MAX_PAUSE_S``)."""
MAX_PAUSE_S = 1.0


def unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says the server is away for now (refused, restarting, shutting down)."""
    return isinstance(
        exc,
        OSError
        | asyncpg.CannotConnectNowError
        | asyncpg.AdminShutdownError
        | asyncpg.CrashShutdownError
        | asyncpg.PostgresConnectionError,
    )


class WaitingConnect:
    """The pool's ``connect``: :func:`asyncpg.connect`, tried again while :func:`unavailable`."""

    def __init__(self, wait_s: float, waiting: Callable[[], bool], where: str) -> None:
        self.wait_s = wait_s
        self._waiting = waiting
        self._where = where
        self.away = False
        """The last attempt to connect failed (the server is away); said once in the log."""

    async def __call__(self, *args: Any, **kwargs: Any) -> asyncpg.Connection:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait_s
        pause = PAUSE_S
        while True:
            try:
                conn: asyncpg.Connection = await asyncpg.connect(*args, **kwargs)
            except Exception as exc:
                if not self._waiting() or not unavailable(exc) or loop.time() + pause > deadline:
                    raise
                if not self.away:
                    self.away = True
                    log.warning(
                        "PostgreSQL at %s is away (%s); connecting again",
                        self._where,
                        type(exc).__name__,
                    )
            else:
                if self.away:
                    self.away = False
                    log.warning("PostgreSQL at %s answers again", self._where)
                return conn
            await asyncio.sleep(pause)
            pause = min(MAX_PAUSE_S, pause * 2)
