"""A core on a fake clock for scheduled prompts and memory: a scripted model, recording threads
(one per key, reached without an incoming event as an adapter would; the channel of
``slack:T:C:ts`` is ``slack:T:C``) and the real SQLite store."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from bot.api.inbound import Author, Inbound, ThreadKey
from bot.config import Settings
from bot.core import Core
from bot.infra.clock import ManualClock
from bot.llm.messages import ToolResult, UserMessage
from bot.llm.model import Model
from bot.scheduler.schedules import Schedule
from bot.storage.sqlite.store import SqliteStore
from bot.tools import ToolContext, ToolRegistry, tool
from bot.tools.builtin import builtin_tools
from tests.fakes.scripted_model import ScriptedModel
from tests.fakes.surface import FakeMessage, RecordingSurface, drive

PARIS = ZoneInfo("Europe/Paris")
NOW = datetime(2026, 3, 28, 12, 0, tzinfo=PARIS).timestamp()
"""Saturday 2026-03-28 12:00 in Paris (CET)."""
KEY = ThreadKey("slack:T1:C1:100.1")
ALICE = Author(id="slack:U1", display_name="Alice")
BOB = Author(id="slack:U2", display_name="Bob")


class World:
    def __init__(self, tmp_path: Path, model: Model | None = None, **settings: Any) -> None:
        self.clock = ManualClock(start=NOW)
        self.model = ScriptedModel([])
        self.runs_on: Model = model or self.model
        self.settings = Settings(data_dir=tmp_path, timezone="Europe/Paris", **settings)
        self.threads: dict[str, RecordingSurface] = {}
        self.ran: list[str] = []
        ran = self.ran

        @tool(side_effects=True)
        async def deploy(ctx: ToolContext, target: str) -> str:
            """Deploy the service.

            Args:
                target: Where to.
            """
            ran.append(target)
            return f"deployed to {target}"

        self.tools = [*builtin_tools(), deploy]
        self.core = self._core()
        self._n = 0

    def thread(self, key: str = KEY) -> RecordingSurface:
        if key not in self.threads:
            self.threads[key] = RecordingSurface(self.clock, thread_key=key)
        return self.threads[key]

    def _core(self, **settings: Any) -> Core:
        if settings:
            self.settings = self.settings.model_copy(update=settings)
        store = SqliteStore(self.settings.database_path)
        core = Core(self.settings, store, self.runs_on, ToolRegistry(self.tools), self.clock)
        core.register_surfaces("slack:", self.thread, lambda key: key.rsplit(":", 1)[0])
        return core

    async def restart(self, down_for: float = 0.0, **settings: Any) -> None:
        """Stop the process, let ``down_for`` seconds pass, start a new one on the same data."""
        await self.core.aclose()
        await self.clock.advance(down_for)
        self.core = self._core(**settings)
        await self.core.start()

    async def say(self, words: str, author: Author = ALICE, key: str = KEY) -> None:
        self._n += 1
        inbound = Inbound(ThreadKey(key), author, words, f"ev{self._n}")
        # the fake clock moves only while the run works: a long batch (a thousand calls) on a
        # busy machine needs more steps, not more fake seconds of anything it waits for
        await drive(self.clock, self.core.handle(inbound, self.thread(key)), limit=36_000.0)

    async def later(self, seconds: float) -> int:
        """Let ``seconds`` pass, wake the scheduler as its timer would, and let what it started
        finish; returns how many jobs ran."""
        await self.clock.advance(seconds)
        ran = await self.core.scheduler.run_due()
        await drive(self.clock, self.core.wait_idle())
        return ran

    async def until(self, at: float) -> int:
        """:meth:`later`, up to the time ``at`` (a microsecond past it: ``now + (at - now)`` can
        fall one rounding short of ``at`` in floating point, and a job due at ``at`` not run)."""
        return await self.later(max(0.0, at - self.clock.now()) + 1e-6)

    async def schedules(self, key: str = KEY) -> list[Schedule]:
        return await self.core.store.schedules_of(key)

    async def results(self, key: str = KEY) -> list[ToolResult]:
        session = await self.core.store.load_session(ThreadKey(key), self.clock.now())
        return [m for m in session.messages if isinstance(m, ToolResult)]

    async def asked(self, key: str = KEY) -> list[UserMessage]:
        session = await self.core.store.load_session(ThreadKey(key), self.clock.now())
        return [m for m in session.messages if isinstance(m, UserMessage)]

    def cards(self, key: str = KEY) -> list[FakeMessage]:
        return [m for m in self.thread(key).live() if any(b.label == "Approve" for b in m.buttons)]

    async def click(self, label: str, who: Author, key: str = KEY) -> str | None:
        card = self.cards(key)[-1]
        button = next(b for b in card.buttons if b.label == label)
        note = await drive(
            self.clock, self.core.on_action(button.action_id, who, self.thread(key), card.id)
        )
        await drive(self.clock, self.core.wait_idle())
        return note
