"""How an accepted message gets answered, as :class:`bot.core.Core` does it: given its place in
its thread (or handed to the run going on there), then answered in its turn under the thread's
lease; a scheduled prompt's turn; and, with several workers, a message another worker accepted
or a thread whose worker died."""

from __future__ import annotations

from collections.abc import Awaitable

from bot.channels import Channels
from bot.clock import Clock
from bot.conversation import Author, ThreadKey
from bot.decisions import Decisions
from bot.leasing import Leasing
from bot.llm.messages import UserMessage
from bot.present.surface import Surface
from bot.recovery import Recovery
from bot.scheduler.prompts import left_over_notice
from bot.sessions.model import RunState
from bot.sessions.store import SessionStore
from bot.storage.protocol import Store
from bot.supervisor import Supervisor
from bot.surfaces import Surfaces
from bot.tasks import TaskSet
from bot.threads import ThreadLocks, Turn
from bot.workers import Alone, Workers

WAITING = "I'll read this once the approval above is decided."
SCHEDULED_WAIT_S = 600.0
"""A scheduled prompt waits this long for a run on another worker to end."""


class Turns:
    """Mixed into :class:`bot.core.Core`, which holds what they use."""

    store: Store
    clock: Clock
    tasks: TaskSet
    surfaces: Surfaces
    channels: Channels
    supervisor: Supervisor
    decisions: Decisions
    recovery: Recovery
    leases: Leasing
    sessions: SessionStore
    work: Alone | Workers
    _locks: ThreadLocks[ThreadKey]

    async def _place(
        self,
        key: ThreadKey,
        message: UserMessage,
        author: Author,
        surface: Surface,
        notice: str | None,
        *,
        awaited: bool,
        fresh: bool = True,
    ) -> Awaitable[None] | None:
        """An accepted message: handed to the thread's running run, or given its place in line
        and the work that answers it (``fresh``: accepted just now by this worker)."""
        steer = self.channels.during_run(key) == "steer" and notice is None
        if steer and await self.supervisor.steer(key, message):
            return None
        turn = self._locks.reserve(key)
        answer = self._answer(
            key, turn, message, author, surface, notice, arrival=True, fresh=fresh
        )
        work = self.tasks.spawn(answer, awaited=awaited)
        if work is None:  # shutting down
            turn.cancel()
        else:  # a task cancelled before it began never enters its turn: give the place up
            work.add_done_callback(lambda _: turn.cancel())
        return work

    async def scheduled_turn(
        self, key: ThreadKey, message: UserMessage, author: Author, surface: Surface, notice: str
    ) -> Awaitable[None] | None:
        """A prompt someone scheduled (:mod:`bot.scheduler.prompts`, which checked who may, and
        accepted ``message`` with the claim of its run): a new turn of its thread after any run
        going on there (never steered into it), with ``notice`` shown first. Returns the work,
        started; None when the core is shutting down (the message, kept, is answered after the
        restart or by another worker)."""
        turn = self._locks.reserve(key)
        wait_s = SCHEDULED_WAIT_S  # then left to the worker that holds the thread, nudged
        answer = self._answer(
            key, turn, message, author, surface, notice, arrival=True, fresh=True, wait_s=wait_s
        )
        work = self.tasks.spawn(answer)
        if work is None:
            turn.cancel()
        else:
            work.add_done_callback(lambda _: turn.cancel())
        return work

    async def _answer(
        self,
        key: ThreadKey,
        turn: Turn[ThreadKey],
        message: UserMessage,
        author: Author,
        surface: Surface,
        notice: str | None,
        *,
        arrival: bool = False,
        fresh: bool = False,
        wait_s: float = 0.0,
    ) -> None:
        """Answer ``message`` in its turn, holding the thread's lease. Held elsewhere: the
        ``arrival`` (a message kept until its session holds it) is left to the holder, nudged
        when ``fresh``."""
        async with turn, self.leases.hold(key, wait_s=wait_s) as held:
            if not held:
                if fresh:
                    await self.work.nudge(key)
                return
            if arrival and await self.work.answered(message):
                return
            session = await self.store.load_session(key, self.clock.now())
            await self.recovery.repair(session, surface)
            session.inbox.append(message)
            if session.state is RunState.AWAITING_APPROVAL:
                await self.sessions.save_state(session)
                if (await self.decisions.batch(session, surface)).waiting:
                    await self.supervisor.say(session, surface, WAITING)
                    return
                await self.supervisor.drive(session, author, surface, resume=True, notice=notice)
                return
            arrived, session.inbox = session.inbox, []
            session.state = (
                RunState.RUNNING
            )  # stored with the message: a crash now is a cut-off run
            await self.sessions.append_messages(session, arrived)
            await self.supervisor.drive(session, author, surface, notice=notice, stored=True)

    # --- several workers ---

    def _pick_up(self, key: ThreadKey, message: UserMessage) -> Awaitable[None] | None:
        """A message another worker accepted that is now this worker's to answer."""
        surface = self.surfaces.surface_for(key)
        if surface is None:
            return None
        author = Author(message.author_id or "", message.author_name or "someone")
        notice = left_over_notice(message)
        return self.tasks.spawn(
            _settle(self._place(key, message, author, surface, notice, awaited=False, fresh=False))
        )

    def _take_over(self, key: ThreadKey) -> None:
        """A thread whose worker died mid-run: resumed here as after a restart."""
        surface = self.surfaces.surface_for(key)
        if surface is not None:
            self.tasks.spawn(self.recovery.recover(key, surface))


async def _settle(work: Awaitable[Awaitable[None] | None]) -> None:
    placed = await work
    if placed is not None:
        await placed
