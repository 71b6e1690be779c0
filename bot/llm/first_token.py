"""A model whose answer must begin in time: the first-token timeout.

A server that accepts a request and then sends nothing (or only keep-alive chunks) would hold a
thread for every attempt's full timeout, retries included. Wrapped in :class:`FirstTokenLimit`,
a call that yields no piece (text, a tool call, usage, its end) within ``seconds`` of its start
is abandoned and raises :class:`~bot.errors.ModelSilent`, whose message is the thread's note.
Retries made meanwhile count toward the limit: the person in the thread has waited that long.
The time comes from the injected clock; once the first piece is there, nothing is added.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator

from bot.errors import ModelSilent
from bot.infra.clock import Clock
from bot.llm.model import Model, ModelPiece, ModelRequest

SETTING = "THREADLINE_MODEL_FIRST_TOKEN_TIMEOUT_S"


def silent_note(seconds: float) -> str:
    return (
        f"The model server sent nothing for {seconds:g} s; it may be overloaded or stuck. "
        f"Please try again in a moment (an operator can change {SETTING})."
    )


class FirstTokenLimit:
    """``model``, with its calls abandoned when nothing comes for ``seconds``."""

    def __init__(self, model: Model, clock: Clock, seconds: float) -> None:
        self._model = model
        self._clock = clock
        self._seconds = seconds

    @property
    def name(self) -> str:
        return self._model.name

    @property
    def label(self) -> str:
        return self._model.label

    async def aclose(self) -> None:
        await self._model.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        pieces = self._model.stream(request)
        try:
            first = await self._first(pieces)
            if first is None:
                return
            yield first
            async for piece in pieces:
                yield piece
        finally:
            if isinstance(pieces, AsyncGenerator):  # its request ends now, not when collected
                await pieces.aclose()

    async def _first(self, pieces: AsyncIterator[ModelPiece]) -> ModelPiece | None:
        """The call's first piece (None: it ended without any), within the limit."""
        loop = asyncio.get_running_loop()
        limit = asyncio.timeout(None)
        try:
            async with limit:
                alarm = loop.create_task(self._alarm(limit))
                try:
                    return await anext(pieces, None)
                finally:
                    alarm.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await alarm
        except TimeoutError:
            if limit.expired():
                raise ModelSilent(silent_note(self._seconds)) from None
            raise

    async def _alarm(self, limit: asyncio.Timeout) -> None:
        """Ends the wait when the clock says the time is up (the timeout does the cancelling)."""
        await self._clock.sleep(self._seconds)
        limit.reschedule(asyncio.get_running_loop().time())
