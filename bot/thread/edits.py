"""Edits: a person gives the message the bot is answering, or has just answered, a new text, and
the run starts again on it.

An edit counts when all of these hold; otherwise it changes nothing:

- it comes within :data:`EDIT_WINDOW_S` of the message's first post (:func:`in_window`, asked
  before the edit is accepted);
- the thread's session holds the message (by its platform id: a Slack ``ts``, a Discord message
  id) as its latest from a person: nobody wrote since (the bot's own replies aside) and nothing
  waits in the run's inbox;
- the thread answers that message (not one only kept as context), and the text is new.

Then a run of this process answering the message is stopped as Stop stops it
(:meth:`Edits.stop_for`, when the edit is placed), and in the edit's place in the thread's
line (:meth:`Edits.apply`, the thread held): an approval a paused run waits for expires, the
old answer is marked replaced (its first message says so, the others go), the transcript is
cut after the message and its text replaced — the model reads the new text, not both, and
not the old answer — and the caller drives a new run.

An edit is accepted like any message (:mod:`bot.thread.deliveries`): its delivery id recorded
and the edit kept as an arrival before the platform is acknowledged, so a redelivery changes
nothing and a restart finds it. The write of the transcript with the new text ends the arrival
in the same transaction (stored as running: a crash after it is a cut-off run, picked up once);
the marking before it is made the same way again after a restart.
"""

from __future__ import annotations

import logging

from bot.api.inbound import Author, ThreadKey
from bot.api.surface import Surface
from bot.approvals.decisions import Decisions
from bot.errors import SurfaceError
from bot.llm.messages import UserMessage
from bot.sessions.model import RunState, Session
from bot.thread.deliveries import Deliveries
from bot.thread.hold import Holds
from bot.thread.runs import Supervisor
from bot.thread.settings import Channels

log = logging.getLogger(__name__)

EDIT_WINDOW_S = 600.0
"""How long after its first post an edit of a message starts its answer again."""
REPLACED = "_Replaced: the message this answered was edited. The new answer is below._"
"""What the old answer's first message shows instead of the old answer."""


def in_window(posted_at: float, now: float) -> bool:
    """Whether a message first posted at ``posted_at`` is edited soon enough (a platform's clock
    a little ahead of ours is no reason to refuse)."""
    return now - posted_at <= EDIT_WINDOW_S


class Edits:
    def __init__(
        self,
        supervisor: Supervisor,
        holds: Holds,
        channels: Channels,
        decisions: Decisions,
        deliveries: Deliveries,
    ) -> None:
        self.supervisor = supervisor
        self.holds = holds
        self.channels = channels
        self.decisions = decisions
        self.deliveries = deliveries

    def stop_for(self, key: ThreadKey, edit: UserMessage, author: Author) -> None:
        """The run going on in this process, if it answers the message ``edit`` changes,
        stops now (its answer is replaced once the edit's turn comes)."""
        active = self.supervisor.active.get(key)
        if active is None or active.session.inbox:
            return
        latest = active.session.latest_person()
        if latest is not None and latest.message_id == edit.message_id and latest.text != edit.text:
            log.info("the message answered in %s was edited: its run stops", key)
            self.supervisor.stop(key, author)

    async def apply(self, session: Session, edit: UserMessage, surface: Surface) -> bool:
        """In the edit's place, the thread held: True when it counts — the old answer is marked
        replaced and the session holds the new text, stored as running (its run is the
        caller's to drive); False, with its arrival ended, when it changes nothing."""
        index = self._edited(session, edit)
        if index is None:
            log.info("an edit in %s changes nothing (not the latest message answered)", session.key)
            await self.deliveries.end(edit)
            return False
        if session.state is RunState.AWAITING_APPROVAL:
            await self.decisions.expire_open(session, surface)
        await self._mark_replaced(session, surface)
        original = session.messages[index]
        new = original.model_copy(update={"text": edit.text, "event_id": edit.event_id})
        session.answer = None
        session.state = RunState.RUNNING  # stored with the new text: a crash now is a cut-off run
        session.updated_at = self.holds.clock.now()
        await self.holds.sessions.replace_messages(session, [*session.messages[:index], new])
        log.info("the message answered in %s was edited: answering it again", session.key)
        return True

    def _edited(self, session: Session, edit: UserMessage) -> int | None:
        """Where the transcript holds the message ``edit`` changes, if the edit counts."""
        if session.inbox or edit.message_id is None:
            return None
        index = next(
            (
                i
                for i in range(len(session.messages) - 1, -1, -1)
                if isinstance(session.messages[i], UserMessage)
            ),
            None,
        )
        if index is None:
            return None
        original = session.messages[index]
        assert isinstance(original, UserMessage)
        if original.message_id != edit.message_id or original.text == edit.text:
            return None
        if not self.channels.answers(
            session.key, addressed=original.addressed, quiet=session.quiet
        ):
            return None
        return index

    async def _mark_replaced(self, session: Session, surface: Surface) -> None:
        """The old answer's first message says it was replaced; the rest of it goes (a
        platform failure leaves that message as it is)."""
        answer = session.answer
        latest = session.latest_person()
        if answer is None or latest is None or answer.to != latest.message_id:
            return
        first, *rest = answer.message_ids or ("",)
        try:
            if first:
                await surface.edit(first, surface.render(REPLACED), final=True)
        except SurfaceError:
            log.warning("could not mark the old answer in %s replaced", session.key)
        for message_id in rest:
            try:
                await surface.delete(message_id)
            except SurfaceError:
                log.warning("could not delete a message of the old answer in %s", session.key)
