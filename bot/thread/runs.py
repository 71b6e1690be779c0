"""The per-thread supervisor: it runs the engine for a thread (the caller holds the thread's
lock), again while messages wait in the inbox, knows which threads have a run going, hands
messages to a running run (steering), and stops a run from a button or a command."""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bot.api.actions import StopRun, encode
from bot.api.inbound import Author, ThreadKey
from bot.api.surface import Button, Surface
from bot.approvals.models import ApprovalRequest, ApprovalStatus
from bot.approvals.store import ApprovalStore
from bot.engine.events import Finished, Notice, TodosChanged, ToolFinished
from bot.engine.loop import Engine
from bot.engine.states import RunResult
from bot.errors import LeaseLost
from bot.infra import metrics
from bot.infra.clock import Clock
from bot.llm.messages import Usage, UserMessage
from bot.present.approval_card import ran_note, update_card
from bot.present.budget import BudgetRegistry
from bot.present.presenter import Presenter
from bot.sessions.model import LiveMessage, PanelRef, RunState, Session, stopped
from bot.sessions.store import SessionStore
from bot.tools.base import ToolContext

log = logging.getLogger(__name__)

Answered = Callable[[Surface, str], Awaitable[str | None]]
"""Told of a run that ended with its final answer: the thread's surface and the run's id;
returns the id of a message it posted under the answer (part of it), if any."""


@dataclass(slots=True)
class Active:
    """The run going on in a thread."""

    session: Session
    run_id: str
    task: asyncio.Task[RunResult] | None = None
    stopped_by: Author | None = None
    lost: bool = False
    """Another worker took the thread over: the run stops without another write."""
    shown: tuple[str, ...] = ()
    """The messages that hold what the run wrote (once it ended)."""


@dataclass(eq=False)
class Supervisor:
    engine: Engine
    store: SessionStore
    approvals: ApprovalStore
    clock: Clock
    budgets: BudgetRegistry
    file_after: int | None = None
    """Past this many characters, the rest of an answer is posted as a file."""
    answered: Answered | None = None
    """Told of each run that ended with its final answer (feedback buttons go under it)."""
    active: dict[ThreadKey, Active] = field(default_factory=dict, init=False)
    """The run going on in each thread that has one."""

    def running(self, key: ThreadKey) -> bool:
        return key in self.active

    async def steer(self, key: ThreadKey, message: UserMessage) -> bool:
        """Hand ``message`` to the thread's running run (its next model call reads it); never
        an edit (:mod:`bot.thread.edits`)."""
        active = self.active.get(key)
        if active is None or message.edit:
            return False
        active.session.inbox.append(message)
        await self.store.save_state(active.session)
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

    def abandon(self, key: ThreadKey) -> None:
        """The thread's lease was lost: its run stops at once (its writes would be refused)."""
        active = self.active.get(key)
        if active is None:
            return
        active.lost = True
        if active.task is not None:
            active.task.cancel()

    async def drive(
        self,
        session: Session,
        author: Author,
        surface: Surface,
        *,
        resume: bool = False,
        notice: str | None = None,
        state: RunState = RunState.RUNNING,
        stored: bool = False,
    ) -> None:
        """Run the engine, again while messages wait in the inbox. The caller holds the lock.

        ``state`` is what the session says while the first run goes on (``RESUMED`` for a run
        picked up after a restart); ``stored`` when the caller has just stored the session in
        that state (its first run then writes nothing before it starts).

        The session is never stored idle with messages in its inbox: a message handed to a run
        has no arrival any more, and a restart answers the inbox of a run cut off only."""
        active = Active(session, secrets.token_hex(8))
        self.active[session.key] = active
        try:
            while True:
                active.run_id, active.stopped_by = secrets.token_hex(8), None
                with metrics.counted_run() as counted:
                    result = await self._run_once(
                        active,
                        author,
                        surface,
                        resume=resume,
                        notice=notice,
                        state=state,
                        stored=stored,
                    )
                    counted.outcome = metrics.outcome_of(
                        ok=result.ok, paused=result.paused, stopped=active.stopped_by is not None
                    )
                shown = active.shown
                if self.answered is not None and _answered(result, active):
                    under = await self.answered(surface, active.run_id)
                    shown += () if under is None else (under,)
                latest = session.latest_person()  # what the run answered
                session.answered(None if latest is None else latest.message_id, shown)
                # a Stop ends the run; messages that arrived before it are answered now, by the
                # next run, stored as running with them (a crash finds a cut-off run). Without
                # any, the thread stops taking messages before the last write: one that comes
                # during it waits for its own turn, an arrival until then.
                again = not result.paused and bool(session.inbox)
                if not again and self.active.get(session.key) is active:
                    del self.active[session.key]
                if result.paused:
                    session.state = RunState.AWAITING_APPROVAL
                else:
                    session.state = RunState.RUNNING if again else RunState.IDLE
                session.live_messages = []  # the presenter's last edits and stops mended them
                session.updated_at = self.clock.now()
                await self.store.save_state(session)
                log.info("the run in %s ended: %s", session.key, _outcome(result))
                resume, notice, state, stored = False, None, RunState.RUNNING, True
                if not again:
                    break
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
        stored: bool,
    ) -> RunResult:
        session = active.session
        presenter = self.presenter(
            session, surface, Button(encode(StopRun(active.run_id)), "Stop", "danger")
        )
        try:
            if notice:
                await presenter(Notice(notice))
            if not (stored and session.state is state):
                session.state = state
                session.updated_at = self.clock.now()
                await self.store.save_state(session)
            ctx = ToolContext(session.key, session, author, self.clock)
            active.task = asyncio.ensure_future(
                self.engine.run(
                    session,
                    presenter,
                    ctx,
                    resume=resume,
                    by_person=lambda: active.stopped_by is not None,
                )
            )
            try:
                return await active.task
            except asyncio.CancelledError:
                if active.lost:
                    raise LeaseLost(f"the lease on {session.key} was taken over") from None
                if active.stopped_by is None:
                    raise
                who = active.stopped_by.display_name
                await presenter(Notice(f"Stopped by {who}."))
                if (todos := stopped(session.todos)) != session.todos:  # the plan is not open
                    session.todos = todos  # any more: nothing works on it
                    await presenter(TodosChanged(todos))
                await presenter(Finished(Usage()))
                return RunResult(False, 0, Usage(), f"stopped by {who}")
        finally:
            active.task = None
            await presenter.close()
            active.shown = presenter.shown

    async def say(self, session: Session, surface: Surface, text: str) -> None:
        """A short note from the bot in the thread, outside any run."""
        presenter = self.presenter(session, surface)
        try:
            await presenter(Notice(text))
            await presenter(Finished(Usage()))
        finally:
            await presenter.close()

    def presenter(
        self, session: Session, surface: Surface, stop: Button | None = None
    ) -> Presenter:
        store, approvals = self.store, self.approvals

        async def persist_panel(panel: PanelRef | None) -> None:
            session.panel = panel
            await store.save_state(session)

        async def on_card(request: ApprovalRequest, message_id: str) -> None:
            await approvals.set_approval_card(request.id, message_id)

        async def on_tool(done: ToolFinished) -> bool:  # its card, if any, shows what it did
            found = (await approvals.approvals_for(session.key, [done.call_id])).get(done.call_id)
            if found is None or found.status is not ApprovalStatus.APPROVED:
                return False
            await update_card(surface, self.clock, found, ran_note(done))
            return True

        async def on_live(message_id: str, live: LiveMessage | None) -> None:
            """What a message with the Stop button shows (or an open stream), kept for a
            restart to mend; forgotten once it has neither."""
            kept = [m for m in session.live_messages if m.message_id != message_id]
            if live is not None:
                kept.append(live)
            if kept != session.live_messages:
                session.live_messages = kept
                await store.save_state(session)

        return Presenter(
            surface,
            self.clock,
            self.budgets,
            session.panel,
            persist_panel,
            on_live=on_live if stop is not None else None,
            on_card=on_card,
            stop_button=stop,
            on_tool=on_tool,
            file_after=self.file_after,
        )


def _answered(result: RunResult, active: Active) -> bool:
    return result.ok and not result.paused and active.stopped_by is None and not active.lost


def _outcome(result: RunResult) -> str:
    if result.paused:
        return "paused for an approval"
    return "answered" if result.ok else f"failed ({result.message})"
