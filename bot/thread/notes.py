"""What the model is told about a thread before each call, besides its transcript and todos:
where and when the run is (:mod:`bot.thread.situation`) and the thread's memories
(:mod:`bot.memory.service`); the thread's schedules are read too, since the tools offered
depend on them.

Whatever another worker may change is read from the store at a run's first model call (the
schedules, the memories, the channel's name as its adapter finds it); the later calls of the
run reuse it unless this process changed it since, and reuse the very same note objects while
their words stay the same, so the request's text up to them is reused too. A model call then
costs no store read for its notes.
"""

from __future__ import annotations

from collections import OrderedDict

from bot.config import Settings
from bot.engine.loop import ThreadNotes
from bot.infra.clock import Clock
from bot.memory.service import Memories
from bot.scheduler.prompts import PromptSchedules
from bot.sessions.model import Session
from bot.thread.reach import Surfaces
from bot.thread.settings import Channels
from bot.thread.situation import CACHED_THREADS, Situations


class ThreadNoter:
    """``await noter(session, first)``: the :class:`ThreadNotes` of one model call."""

    def __init__(
        self,
        settings: Settings,
        clock: Clock,
        channels: Channels,
        surfaces: Surfaces,
        schedules: PromptSchedules,
        memory: Memories,
    ) -> None:
        self._settings, self._clock, self._channels = settings, clock, channels
        self._surfaces, self._schedules, self._memory = surfaces, schedules, memory
        self._situations = Situations()
        self._names: OrderedDict[str, str | None] = OrderedDict()
        """Each thread's channel name as found at its run's first call."""

    async def __call__(self, session: Session, first: bool) -> ThreadNotes:
        key = session.key
        await self._schedules.refresh(key, again=first)
        _, section = self._channels.section(key)
        where = self._situations.note(
            self._clock.now(),
            key,
            zone=(section.timezone if section else None) or self._settings.timezone,
            channel=await self._channel_name(key, first),
            direct=self._surfaces.direct(key),
            messages=session.messages,
        )
        return ThreadNotes(where=where, after=await self._memory.notes(key, again=first))

    async def _channel_name(self, key: str, first: bool) -> str | None:
        if not first and key in self._names:
            return self._names[key]
        name = self._names[key] = await self._surfaces.channel_name(key)
        self._names.move_to_end(key)
        while len(self._names) > CACHED_THREADS:
            self._names.popitem(last=False)
        return name
