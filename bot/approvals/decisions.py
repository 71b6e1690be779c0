"""An approval's life once its card is posted: a click decides it, or it expires.

A click is checked against the policy and recorded once (:class:`ApprovalService`), shown on
the card, and the paused run resumes under the thread's lock in a task the core owns — in this
process or after a restart. Expiry comes from the request's timer, a reset of the thread, or the
repair of a run a restart cut off; each expires the request once and says so on its card.

A paused run may also wait for a person's sign-in to an MCP server (a restart found its call
waiting, :mod:`bot.mcp.sign_in_waits`): its callback resumes the run, and its link's expiry
(:data:`SIGN_IN_JOB`) ends the call "not signed in" and lets the run go on.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from bot.api.inbound import Author, ThreadKey
from bot.api.surface import Surface
from bot.approvals.decided import Decided
from bot.approvals.inline_waits import recorded
from bot.approvals.models import ApprovalRequest, ApprovalStatus, Choice
from bot.approvals.service import EXPIRE_JOB, ApprovalService
from bot.approvals.store import ApprovalStore
from bot.engine.prompt import open_calls
from bot.errors import SurfaceError
from bot.llm.messages import ToolResult
from bot.mcp.sign_in_waits import SignInWait, SignInWaitStore, not_signed_in
from bot.present.approval_card import post_card, update_card
from bot.scheduler.jobs import Job
from bot.scheduler.service import Scheduler
from bot.sessions.model import RunState, Session
from bot.thread.hold import Holds
from bot.thread.reach import Surfaces
from bot.thread.runs import Supervisor

log = logging.getLogger(__name__)

Spawn = Callable[[Coroutine[Any, Any, None]], object]
Nudge = Callable[[ThreadKey], Awaitable[None]]
RESET_NOTE = "The thread was reset before anyone decided."
APPROVED_NOT_RUN = "The thread was reset before the call ran: nothing was run."
SOMEONE = Author(id="", display_name="someone")
RESUME_WAIT_S = 60.0
"""A click just after a run paused on another worker waits this long for it to let go."""
SIGN_IN_JOB = "mcp_sign_in_expiry"
"""The end of a sign-in wait at its link's expiry (a paused run's call ends "not signed in")."""


@dataclass(frozen=True, slots=True)
class Batch:
    """The approvals of a paused run's open calls."""

    waiting: bool
    """A call still waits for a decision."""
    requester: Author
    """Whose message the run answers (the run resumes on their behalf)."""
    sign_in: SignInWait | None = None
    """The sign-in a call waits for, when no decision is waited for."""

    @property
    def words(self) -> str:
        """What a message sent meanwhile is told (it is read once the run goes on)."""
        if self.sign_in is not None:
            who, server = self.sign_in.person_name, self.sign_in.server
            return (
                f"I'll read this once {who} has signed in to {server} with the link they were"
                " shown (or the link has expired)."
            )
        return "I'll read this once the approval above is decided."


@dataclass(eq=False)
class Decisions:
    approvals: ApprovalService
    store: ApprovalStore
    supervisor: Supervisor
    holds: Holds
    scheduler: Scheduler
    surfaces: Surfaces
    spawn: Spawn
    decided: Decided = field(default_factory=Decided)
    """Wakes the calls that wait for a decision inline (see :mod:`bot.approvals.inline`)."""
    nudge: Nudge | None = None
    """Tells the worker that holds a thread to look at it now (with several workers)."""
    sign_ins: SignInWaitStore | None = None
    """The sign-ins to MCP servers a paused run's calls may wait for (after a restart)."""

    def __post_init__(self) -> None:
        self.scheduler.handle(EXPIRE_JOB, self._expire_job)
        self.scheduler.handle(SIGN_IN_JOB, self._sign_in_job)

    async def decide(
        self,
        approval_id: str,
        actor: Author,
        choice: Choice,
        surface: Surface | None = None,
        *,
        card_id: str | None = None,
    ) -> str:
        """Record a decision (once, if ``actor`` may make it), show it on the card, and resume
        the run in the background. Returns what the clicker is told.

        ``card_id`` is the clicked message: the card, when its id was not recorded (a crash
        between posting the card and storing its id)."""
        outcome = await self.approvals.decide(approval_id, actor, choice)
        if outcome.changed and outcome.request is not None:
            request = outcome.request
            if request.card_id is None and card_id is not None:
                request.card_id = card_id
                await self.store.set_approval_card(request.id, card_id)
            await self._show_and_resume(request, surface)
        return outcome.note

    async def expire(
        self, request: ApprovalRequest, surface: Surface | None, note: str | None = None
    ) -> bool:
        """Expire a pending request and say so on its card; False when it was decided already."""
        expired = await self.approvals.expire(request)
        if expired is None:
            return False
        if surface is not None:
            await update_card(surface, self.holds.clock, expired, note)
        self.decided.notify(request.id)
        return True

    async def expire_open(
        self, session: Session, surface: Surface | None, *, reset: bool = False
    ) -> None:
        """End the approvals of the session's open calls (a repair, or a ``reset`` of the
        thread): pending ones expire; on a reset, an approved call that never ran says so on its
        card (the reset holds the thread, so nothing of it is running)."""
        calls = open_calls(session.messages)
        found = await self.store.approvals_for(session.key, [c.id for c in calls])
        for request in found.values():
            if request.pending:
                if not await self.expire(request, surface, RESET_NOTE if reset else None) and reset:
                    await self._not_run(request, surface)  # a click won the race: say what happened
            elif reset and request.status is ApprovalStatus.APPROVED:
                await self._not_run(request, surface)

    async def _not_run(self, request: ApprovalRequest, surface: Surface | None) -> None:
        latest = await self.store.get_approval(request.id) or request
        if surface is not None and latest.status is ApprovalStatus.APPROVED:
            await update_card(surface, self.holds.clock, latest, APPROVED_NOT_RUN)

    async def batch(self, session: Session, surface: Surface | None) -> Batch:
        """Whether a call of the paused run still waits for a decision (overdue ones expire)
        or for a person's sign-in to an MCP server (a wait a restart found; one whose link
        expired ends the call "not signed in")."""
        calls = open_calls(session.messages)
        found = await self.store.approvals_for(session.key, [c.id for c in calls])
        now = self.holds.clock.now()
        waiting = False
        for request in found.values():
            if request.pending and request.expires_at > now:
                waiting = True
            elif request.pending:
                await self.expire(request, surface)
        signing = []
        if self.sign_ins is not None and calls:
            signing = await self.sign_ins.sign_in_waits_for(session.key, [c.id for c in calls])
            await self._signed_out(session, signing, now)
        open_ = [w for w in signing if w.open_at(now)]
        sign_in = open_[-1] if open_ and not waiting else None
        waiting = waiting or bool(open_)
        first = next(iter(found.values()), None)
        if first is not None:
            return Batch(waiting, Author(first.requester_id, first.requester_name), sign_in)
        if signing:  # the person signing in is the run's
            person = Author(signing[-1].person_id, signing[-1].person_name)
            return Batch(waiting, person, sign_in)
        return Batch(waiting, SOMEONE)

    async def resume(self, key: ThreadKey, surface: Surface) -> None:
        """Go on with the thread's paused run once none of its calls waits any more (on
        another worker's store: once that worker has let the thread go)."""
        async with self.holds.session(key, wait_s=RESUME_WAIT_S) as session:
            if session is None:
                log.warning("%s is still held by another worker; its decision waits there", key)
                return
            if session.state is not RunState.AWAITING_APPROVAL:
                return
            batch = await self.batch(session, surface)
            if not batch.waiting:
                await self.supervisor.drive(session, batch.requester, surface, resume=True)

    async def recover(self, key: ThreadKey, surface: Surface) -> None:
        """After a restart: a paused run whose requests were all decided before it (the process
        died between the decision and its card or its resume) shows the decisions on their
        cards and goes on; a request whose card never showed (the process died before posting
        it) gets its card now."""
        async with self.holds.session(key) as session:
            if session is None or session.state is not RunState.AWAITING_APPROVAL:
                return
            calls = open_calls(session.messages)
            found = await self.store.approvals_for(session.key, [c.id for c in calls])
            for request in found.values():
                if not request.pending:
                    await update_card(surface, self.holds.clock, request)
                elif request.card_id is None:
                    await self._post_late_card(request, surface)
        await self.resume(key, surface)

    async def _post_late_card(self, request: ApprovalRequest, surface: Surface) -> None:
        try:
            card_id = await post_card(surface, self.holds.clock, request)
        except SurfaceError:
            log.warning("could not post the card of approval %s in %s", request.id, request.key)
            return
        await self.store.set_approval_card(request.id, card_id)
        log.info("approval %s in %s: its card is shown after a restart", request.id, request.key)

    async def _show_and_resume(self, request: ApprovalRequest, surface: Surface | None) -> None:
        key = ThreadKey(request.key)
        if surface is None or surface.thread_key != key:
            surface = self.surfaces.surface_for(key)
        if surface is None:
            log.info("approval %s is decided; its thread %s is not reachable now", request.id, key)
            self.decided.notify(request.id)
            return
        await update_card(surface, self.holds.clock, request)
        if not self.decided.notify(request.id):  # a call waiting for it inline goes on by itself
            if self.nudge is None or not await self._inline_elsewhere(request):
                self.spawn(self.resume(key, surface))
            if self.nudge is not None:  # it may wait inline on the worker that holds the thread
                try:
                    await self.nudge(key)
                except Exception as exc:  # that call reads the store again soon by itself
                    log.warning(
                        "could not tell the worker holding %s of the decision: %s", key, exc
                    )

    async def _inline_elsewhere(self, request: ApprovalRequest) -> bool:
        """Whether a call waits for ``request`` inline on another worker (its thread's session
        records it until the decision is in): it goes on there once nudged, and there is no
        paused run to resume."""
        session = await self.holds.sessions.load_session(
            ThreadKey(request.key), self.holds.clock.now()
        )
        return request.id in recorded(session)

    async def _expire_job(self, job: Job) -> None:
        request = await self.store.get_approval(str(job.payload["approval_id"]))
        if request is None or not request.pending:
            return
        expired = await self.approvals.expire(request)
        if expired is not None:
            await self._show_and_resume(expired, None)

    async def sign_in_expires(self, wait: SignInWait) -> None:
        """Arrange for ``wait`` to end at its link's expiry, should its call be found paused
        then (after a restart): a job in the store, which outlives one."""
        job_id = f"sign-in:{wait.wait_id}"
        payload = {"wait_id": wait.wait_id}
        await self.scheduler.schedule(Job(job_id, SIGN_IN_JOB, wait.expires_at, payload))

    async def _sign_in_job(self, job: Job) -> None:
        self.spawn(self._sign_in_expired(str(job.payload["wait_id"])))

    async def _sign_in_expired(self, wait_id: str) -> None:
        """A sign-in's link expired: a paused run whose call waited for it goes on (the call
        ends "not signed in", :meth:`batch`). A call still waiting in a process ends there by
        itself."""
        wait = await self.sign_ins.get_sign_in_wait(wait_id) if self.sign_ins else None
        if wait is None or wait.used_at is not None:
            return
        key = ThreadKey(wait.key)
        surface = self.surfaces.surface_for(key)
        if surface is None or key in self.supervisor.active:
            return
        async with self.holds.session(key) as session:
            if session is None or session.state is not RunState.AWAITING_APPROVAL:
                return  # held by another worker, or its run is not paused
            batch = await self.batch(session, surface)
            if not batch.waiting:
                await self.supervisor.drive(session, batch.requester, surface, resume=True)

    async def _signed_out(self, session: Session, waits: list[SignInWait], now: float) -> None:
        """The open calls whose sign-in's link expired unused end "not signed in" (once: the
        wait is ended first); they are not made again, nor is a new link shown."""
        calls = {c.id: c for c in open_calls(session.messages)}
        ended = []
        for wait in waits:
            call = calls.get(wait.call_id)
            if wait.used_at is not None or wait.expires_at > now or call is None:
                continue
            if self.sign_ins is None or not await self.sign_ins.end_sign_in_wait(wait.wait_id, now):
                continue
            said = not_signed_in(wait.person_name, wait.server, wait.timeout_s)
            ended.append(ToolResult(call_id=call.id, name=call.name, content=said, is_error=True))
            log.info("[%s] %s in %s: %s", wait.server, call.id, session.key, said)
        if ended:
            await self.holds.sessions.append_messages(session, ended)
