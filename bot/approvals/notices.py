"""Approvals reach their approvers: a direct message with a link to the card, and the
escalation of a request nobody decided.

Two timers of the request (jobs in our tables, so a restart keeps them): the notice, due when
the request is made, tells the approvers when the person who asked may not decide; the
escalation, due ``escalate_after`` seconds later, tells the people it escalates to (who may
decide from then on, :meth:`bot.policy.who.Policy.decide`) and says so on the card. Each stage
is claimed in the store before its messages go (:meth:`ApprovalStore.claim_notice`): a restart
or a second worker never sends them twice; a crash between the claim and the messages loses
them (the card in the thread still says who can decide).

Who is told: the users listed, then the members of the roles listed, at most
``approval_notify_max`` people, never the person who asked (nor, at the escalation, the users
told already), and only people the policy lets decide (deny lists win).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.api.inbound import Author, ThreadKey
from bot.api.people import People, people_of
from bot.approvals.models import ApprovalRequest
from bot.approvals.service import ESCALATE_JOB, NOTICE_JOB
from bot.approvals.store import ApprovalStore
from bot.errors import SurfaceError
from bot.infra.clock import Clock
from bot.policy.who import Policy
from bot.present.approval_card import update_card
from bot.scheduler.jobs import Job
from bot.scheduler.service import Scheduler
from bot.thread.reach import Surfaces

log = logging.getLogger(__name__)

CARD_WAIT_S = 2.0
"""A notice due before its card is shown looks again this much later."""
APPROVERS, ESCALATION = "approvers", "escalation"


@dataclass(eq=False)
class Notices:
    store: ApprovalStore
    policy: Policy
    surfaces: Surfaces
    scheduler: Scheduler
    clock: Clock
    most: int
    """At most this many people are told at each stage."""

    def __post_init__(self) -> None:
        self.scheduler.handle(NOTICE_JOB, self._notice_job)
        self.scheduler.handle(ESCALATE_JOB, self._escalate_job)

    async def _notice_job(self, job: Job) -> float | None:
        return await self._due(job, APPROVERS)

    async def _escalate_job(self, job: Job) -> float | None:
        return await self._due(job, ESCALATION)

    async def _due(self, job: Job, stage: str) -> float | None:
        """Tell the stage's people; when the card is not shown yet, when to look again."""
        request = await self.store.get_approval(str(job.payload["approval_id"]))
        now = self.clock.now()
        if request is None or not request.pending or request.expires_at <= now:
            return None
        if request.card_id is None:  # the run posts it in a moment (or after a restart)
            again = now + CARD_WAIT_S
            return again if again < request.expires_at else None
        surface = self.surfaces.surface_for(ThreadKey(request.key))
        people = people_of(surface) if surface is not None else None
        if surface is None or people is None:
            log.info("approval %s: its platform sends no direct messages", request.id)
            return None
        told = await self.tell(request, stage, people)
        if stage == ESCALATION and told is not None:
            who = request.approvers.describe_escalation()
            note = f"Nobody decided in time: {who} can decide too"
            note += f" ({told} told by direct message)." if told else "."
            await update_card(surface, self.clock, request, note)
        return None

    async def tell(self, request: ApprovalRequest, stage: str, people: People) -> int | None:
        """Send the stage's direct messages once; how many people were told (None: they had
        been, or another worker is telling them)."""
        recipients = await self._recipients(request, stage, people)
        link = await people.link(request.card_id or "")
        text = await self._words(request, stage, link)
        if not await self.store.claim_notice(request, stage, self.clock.now()):
            return None
        told = 0
        for person in recipients:
            try:
                await people.send(person, text)
                told += 1
            except SurfaceError as exc:
                log.warning("approval %s: could not tell %s: %s", request.id, person, exc)
        log.info("approval %s: %d of %d %s told", request.id, told, len(recipients), stage)
        return told

    async def _recipients(self, request: ApprovalRequest, stage: str, people: People) -> list[str]:
        approvers = request.approvers
        escalated = stage == ESCALATION
        users = approvers.escalate_users if escalated else approvers.users
        roles = approvers.escalate_roles if escalated else approvers.roles
        found: list[str] = []
        seen: set[str] = set(approvers.users) if escalated else set()  # told already

        def add(person: str, role: str | None) -> None:
            author = Author(person, person, frozenset({role}) if role else frozenset())
            if person in seen or person == request.requester_id or len(found) >= self.most:
                return
            seen.add(person)
            verdict = self.policy.decide(
                author, request.key, approvers, request.requester_id, escalated=escalated
            )
            if verdict.allowed:
                found.append(person)
            else:
                log.info("approval %s: %s is not told (%s)", request.id, person, verdict.reason)

        for person in sorted(users):
            add(person, None)
        for role in sorted(roles):
            if len(found) >= self.most:
                break
            try:
                members = await people.members(role, self.most + 1)
            except SurfaceError as exc:  # a missing scope, say: the role's members go untold
                log.warning("approval %s: the members of %s are unknown: %s", request.id, role, exc)
                continue
            for person in members:
                add(person, role)
        return found

    async def _words(self, request: ApprovalRequest, stage: str, link: str | None) -> str:
        channel = await self.surfaces.channel_name(request.key)
        where = f" in #{channel}" if channel else ""
        card = f"[Open the card]({link})" if link else "The card is in the thread"
        expires = datetime.fromtimestamp(request.expires_at, UTC).strftime("%H:%M UTC")
        ask = f"{request.requester_name} asks Threadline to run `{request.tool}`{where}"
        if stage == ESCALATION:
            return (
                f"⏰ Nobody has decided yet: {ask}, and you can now approve or deny it. "
                f"{card} to see the call in full. It expires at {expires}."
            )
        return (
            f"🔐 {ask}, and you are among those who can approve or deny it. "
            f"{card} to see the call in full. It expires at {expires}."
        )
