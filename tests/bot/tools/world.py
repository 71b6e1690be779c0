"""A thread through the real core for tool tests: a scripted model, a recording surface, the
real SQLite store and a manual clock; the tools and toolkits are the test's."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bot.api.inbound import Author, Inbound, ThreadKey
from bot.config import Settings
from bot.core import Core
from bot.infra.clock import ManualClock
from bot.sessions.model import Session
from bot.storage.sqlite.store import SqliteStore
from bot.tools import Tool, ToolRegistry
from bot.tools.builtin import builtin_tools
from bot.tools.toolkit import Toolkit
from tests.fakes.scripted_model import ScriptedModel
from tests.fakes.surface import FakeMessage, RecordingSurface, drive

KEY = ThreadKey("slack:T1:C1:100.1")
ALICE = Author(id="slack:U1", display_name="Alice")
BOB = Author(id="slack:U2", display_name="Bob")


class World:
    def __init__(
        self,
        tmp_path: Path,
        extra: Iterable[Tool] = (),
        toolkits: Iterable[tuple[Toolkit, tuple[str, ...]]] = (),
        **settings: Any,
    ) -> None:
        self.clock = ManualClock(start=1_000_000.0)
        self.model = ScriptedModel([])
        self.settings = Settings(data_dir=tmp_path, workspace_tools=False, **settings)
        self.surface = RecordingSurface(self.clock, thread_key=KEY)
        self.tools = [*builtin_tools(), *extra]
        self.toolkits = list(toolkits)
        self.core = self._core()
        self._n = 0

    def _core(self) -> Core:
        registry = ToolRegistry(self.tools)
        for toolkit, own in self.toolkits:
            registry.attach(toolkit, own=own)
        core = Core(
            self.settings,
            SqliteStore(self.settings.database_path),
            self.model,
            registry,
            self.clock,
        )
        core.register_surfaces(
            "slack:", lambda key: self.surface, lambda key: key.rsplit(":", 1)[0]
        )
        return core

    async def start(self) -> World:
        await self.core.start()
        return self

    async def restart(self) -> None:
        await self.core.aclose()
        self.core = self._core()
        await self.core.start()

    async def say(self, words: str, author: Author = ALICE) -> None:
        self._n += 1
        await drive(
            self.clock, self.core.handle(Inbound(KEY, author, words, f"ev{self._n}"), self.surface)
        )

    def cards(self, tool: str) -> list[FakeMessage]:
        """The approval cards of ``tool``'s calls (decided or not), in order."""
        return [
            m for m in self.surface.live() if f"`{tool}`" in m.text and m.text[:1] in "🔐✅❌⌛"
        ]

    async def click(self, card: FakeMessage, label: str, who: Author = ALICE) -> str | None:
        button = next((b for b in card.buttons if b.label == label), None)
        assert button is not None, [b.label for b in card.buttons]
        note = await drive(
            self.clock, self.core.on_action(button.action_id, who, self.surface, card.id)
        )
        await drive(self.clock, self.core.wait_idle())
        return note

    async def session(self) -> Session:
        return await self.core.store.load_session(KEY, self.clock.now())

    def results(self, name: str) -> list[str]:
        """What the model was shown as results of ``name``'s calls, in order (the last request)."""
        last = self.model.requests[-1]
        return [
            m.content
            for m in last.messages
            if getattr(m, "name", None) == name and m.role == "tool"
        ]
