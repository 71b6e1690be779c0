"""How an accepted message gets answered: handed to the run going on in its thread, or given its
place in the thread's line and answered there, holding the thread (:mod:`bot.thread.hold`); a
scheduled prompt's answer; and, with several workers, a message another worker accepted or a
thread whose worker died."""

from __future__ import annotations

from collections.abc import Awaitable

from bot.api.inbound import Author, ThreadKey
from bot.api.surface import Surface
from bot.approvals.decisions import Decisions
from bot.cluster.workers import Alone, Workers
from bot.files.pending import PendingFiles, joined
from bot.infra.tasks import TaskSet
from bot.llm.messages import UserMessage
from bot.scheduler.prompts import left_over_notice
from bot.sessions.model import RunState, Session
from bot.thread.edits import Edits
from bot.thread.hold import Holds
from bot.thread.line import Place
from bot.thread.reach import Surfaces
from bot.thread.recovery import Recovery
from bot.thread.runs import Supervisor
from bot.thread.settings import Channels

SCHEDULED_WAIT_S = 600.0
"""A scheduled prompt waits this long for a run on another worker to end."""


class Answers:
    def __init__(
        self,
        tasks: TaskSet,
        surfaces: Surfaces,
        channels: Channels,
        supervisor: Supervisor,
        decisions: Decisions,
        recovery: Recovery,
        holds: Holds,
        work: Alone | Workers,
        files: PendingFiles,
        edits: Edits,
    ) -> None:
        self.tasks = tasks
        self.surfaces = surfaces
        self.channels = channels
        self.supervisor = supervisor
        self.decisions = decisions
        self.recovery = recovery
        self.holds = holds
        self.work = work
        self.files = files
        self.edits = edits

    async def place(
        self,
        key: ThreadKey,
        message: UserMessage,
        author: Author,
        surface: Surface,
        notice: str | None,
        *,
        awaited: bool,
        fresh: bool = True,
        files: bool | None = None,
    ) -> Awaitable[None] | None:
        """An accepted message: handed to the thread's running run, or given its place in line
        and the work that answers it (``fresh``: accepted just now by this worker); one the
        thread does not answer (not ``addressed``, :meth:`Channels.answers`) is kept in its
        session there. A message with files (``files``; None: the store is asked) is never
        steered: its files are fetched in its place in line, and it gets its own run. Nor is an
        edit: a run answering the message it changes stops, and the edit is applied in its
        place (:mod:`bot.thread.edits`)."""
        if message.edit:
            self.edits.stop_for(key, message, author)
        steer = self.channels.during_run(key) == "steer" and notice is None and not message.edit
        if steer and files is None:
            files = await self.files.named(message)
        if (
            steer
            and not files
            and self._heard(key, message)
            and await self.supervisor.steer(key, message)
        ):
            return None
        place = self.holds.locks.reserve(key)
        answer = self._answer(
            key,
            place,
            message,
            author,
            surface,
            notice,
            arrival=True,
            fresh=fresh,
        )
        work = self.tasks.spawn(answer, awaited=awaited)
        if work is None:  # shutting down
            place.cancel()
        else:  # a task cancelled before it began never reaches its place: give it up
            work.add_done_callback(lambda _: place.cancel())
        return work

    async def scheduled_answer(
        self, key: ThreadKey, message: UserMessage, author: Author, surface: Surface, notice: str
    ) -> Awaitable[None] | None:
        """A prompt someone scheduled (:mod:`bot.scheduler.prompts`, which checked who may, and
        accepted ``message`` with the claim of its run): a new answer in its thread after any run
        going on there (never steered into it), with ``notice`` shown first. Returns the work,
        started; None when the core is shutting down (the message, kept, is answered after the
        restart or by another worker)."""
        place = self.holds.locks.reserve(key)
        wait_s = SCHEDULED_WAIT_S  # then left to the worker that holds the thread, nudged
        answer = self._answer(
            key, place, message, author, surface, notice, arrival=True, fresh=True, wait_s=wait_s
        )
        work = self.tasks.spawn(answer)
        if work is None:
            place.cancel()
        else:
            work.add_done_callback(lambda _: place.cancel())
        return work

    async def _answer(
        self,
        key: ThreadKey,
        place: Place[ThreadKey],
        message: UserMessage,
        author: Author,
        surface: Surface,
        notice: str | None,
        *,
        arrival: bool = False,
        fresh: bool = False,
        wait_s: float = 0.0,
    ) -> None:
        """Answer ``message`` in its place in the line, holding the thread's lease. Held elsewhere: the
        ``arrival`` (a message kept until its session holds it) is left to the holder, nudged
        when ``fresh``."""
        async with self.holds.session(key, place=place, wait_s=wait_s) as session:
            if session is None:
                if fresh:
                    await self.work.nudge(key)
                return
            if arrival and await self.work.answered(message):
                return
            if arrival:  # its files, fetched in its place: later messages of the thread wait
                message, about = await self.files.read(key, message, surface)
                notice = joined(notice, about)
            await self.recovery.repair(session, surface)
            if message.edit:
                if await self.edits.apply(session, message, surface):
                    await self.supervisor.drive(session, author, surface, stored=True)
                return
            if not self.channels.answers(key, addressed=message.addressed, quiet=session.quiet):
                await self._keep(session, message)
                return
            session.inbox.append(message)
            if session.state is RunState.AWAITING_APPROVAL:
                await self.holds.sessions.save_state(session)
                if (batch := await self.decisions.batch(session, surface)).waiting:
                    await self.supervisor.say(session, surface, batch.words)
                    return
                await self.supervisor.drive(session, author, surface, resume=True, notice=notice)
                return
            arrived, session.inbox = session.inbox, []
            session.state = (
                RunState.RUNNING
            )  # stored with the message: a crash now is a cut-off run
            await self.holds.sessions.append_messages(session, arrived)
            await self.supervisor.drive(session, author, surface, notice=notice, stored=True)

    def _heard(self, key: ThreadKey, message: UserMessage) -> bool:
        """Whether a message may be steered into the thread's running run (one the thread
        does not answer waits for the next answered message instead)."""
        active = self.supervisor.active.get(key)
        quiet = active is not None and active.session.quiet
        return self.channels.answers(key, addressed=message.addressed, quiet=quiet)

    async def _keep(self, session: Session, message: UserMessage) -> None:
        """A message the thread does not answer: kept in its transcript (in the inbox of a run
        that waits for an approval), so the next answered message's run reads it, with its
        author."""
        if session.state is RunState.AWAITING_APPROVAL:
            session.inbox.append(message)
            await self.holds.sessions.save_state(session)
            return
        await self.holds.sessions.append_messages(session, [message])

    # --- several workers ---

    def pick_up(self, key: ThreadKey, message: UserMessage) -> Awaitable[None] | None:
        """A message another worker accepted that is now this worker's to answer."""
        surface = self.surfaces.surface_for(key)
        if surface is None:
            return None
        author = Author(message.author_id or "", message.author_name or "someone")
        notice = left_over_notice(message)
        return self.tasks.spawn(
            _settle(self.place(key, message, author, surface, notice, awaited=False, fresh=False))
        )

    def take_over(self, key: ThreadKey) -> None:
        """A thread whose worker died mid-run: resumed here as after a restart."""
        surface = self.surfaces.surface_for(key)
        if surface is not None:
            self.tasks.spawn(self.recovery.recover(key, surface))


async def _settle(work: Awaitable[Awaitable[None] | None]) -> None:
    placed = await work
    if placed is not None:
        await placed
