"""Running the engine for a thread: one run at a time under the thread's lock (the caller
holds it), again while messages wait in the inbox, stoppable from a button or a command."""

from __future__ import annotations

import asyncio
import logging
import secrets
from dataclasses import dataclass

from bot.approvals.models import ApprovalRequest
from bot.clock import Clock
from bot.conversation import Author, ThreadKey
from bot.engine.events import Finished, Notice
from bot.engine.loop import Engine
from bot.engine.states import RunResult
from bot.llm.messages import Usage, UserMessage
from bot.present.budget import BudgetRegistry
from bot.present.presenter import Presenter
from bot.present.surface import Button, Surface
from bot.sessions.model import PanelRef, RunState, Session
from bot.storage.protocol import Store
from bot.tools.base import ToolContext

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Active:
    """The run going on in a thread."""

    session: Session
    run_id: str
    task: asyncio.Task[RunResult] | None = None
    stopped_by: Author | None = None


class Runner:
    def __init__(self, engine: Engine, store: Store, clock: Clock, budgets: BudgetRegistry) -> None:
        self._engine = engine
        self._store = store
        self._clock = clock
        self._budgets = budgets
        self.active: dict[ThreadKey, Active] = {}

    def running(self, key: ThreadKey) -> bool:
        return key in self.active

    async def steer(self, key: ThreadKey, message: UserMessage) -> bool:
        """Hand ``message`` to the thread's running run (its next model call reads it)."""
        active = self.active.get(key)
        if active is None:
            return False
        active.session.inbox.append(message)
        await self._store.save_state(active.session)
        return True

    def stop(self, key: ThreadKey, actor: Author, run_id: str | None = None) -> bool:
        """Stop the thread's run (only run ``run_id``, if given); False when nothing runs."""
        active = self.active.get(key)
        if active is None or active.task is None or active.task.done():
            return False
        if run_id is not None and active.run_id != run_id:
            return False
        log.info("run in %s stopped by %s", key, actor.id)
        active.stopped_by = actor
        active.task.cancel()
        return True

    async def drive(
        self,
        session: Session,
        author: Author,
        surface: Surface,
        *,
        resume: bool = False,
        notice: str | None = None,
        state: RunState = RunState.RUNNING,
    ) -> None:
        """Run the engine, again while messages wait in the inbox. The caller holds the lock.

        ``state`` is what the session says while the first run goes on (``RESUMED`` for a run
        picked up after a restart)."""
        active = Active(session, secrets.token_hex(8))
        self.active[session.key] = active
        try:
            while True:
                result = await self._run_once(
                    active, author, surface, resume=resume, notice=notice, state=state
                )
                session.state = RunState.AWAITING_APPROVAL if result.paused else RunState.IDLE
                session.updated_at = self._clock.now()
                await self._store.save_state(session)
                resume, notice, state = False, None, RunState.RUNNING
                if result.paused or not session.inbox or active.stopped_by is not None:
                    break  # after a Stop, waiting messages are read with the next one
        finally:
            if self.active.get(session.key) is active:
                del self.active[session.key]

    async def _run_once(
        self,
        active: Active,
        author: Author,
        surface: Surface,
        *,
        resume: bool,
        notice: str | None,
        state: RunState,
    ) -> RunResult:
        session = active.session
        presenter = self.presenter(session, surface, Button(f"stop:{active.run_id}", "Stop", "danger"))
        try:
            if notice:
                await presenter(Notice(notice))
            session.state = state
            session.updated_at = self._clock.now()
            await self._store.save_state(session)
            ctx = ToolContext(session.key, session, author, self._clock)
            active.task = asyncio.ensure_future(self._engine.run(session, presenter, ctx, resume=resume))
            try:
                return await active.task
            except asyncio.CancelledError:
                if active.stopped_by is None:
                    raise
                who = active.stopped_by.display_name
                await presenter(Notice(f"Stopped by {who}."))
                await presenter(Finished(Usage()))
                return RunResult(False, 0, Usage(), f"stopped by {who}")
        finally:
            active.task = None
            await presenter.close()

    async def say(self, session: Session, surface: Surface, text: str) -> None:
        """A short note from the bot in the thread, outside any run."""
        presenter = self.presenter(session, surface)
        try:
            await presenter(Notice(text))
            await presenter(Finished(Usage()))
        finally:
            await presenter.close()

    def presenter(self, session: Session, surface: Surface, stop: Button | None = None) -> Presenter:
        store, clock = self._store, self._clock

        async def persist_panel(panel: PanelRef | None) -> None:
            session.panel = panel
            await store.save_state(session)

        async def on_posted(message_id: str) -> None:
            await store.record_posted(session.key, message_id, "reply", clock.now())

        async def on_card(request: ApprovalRequest, message_id: str) -> None:
            await store.set_approval_card(request.id, message_id)
            await store.record_posted(session.key, message_id, "card", clock.now())

        return Presenter(
            surface, clock, self._budgets, session.panel, persist_panel, on_posted, on_card, stop
        )
