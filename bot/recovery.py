"""What a restart leaves behind, mended: tool calls without a result, and runs cut off.

Every open tool call gets an "interrupted" result (and its approval, if any, expires): nothing with
side effects is re-run silently. A run cut off by a restart is picked up where it left off, once:
the session says ``resumed`` while it runs, and cut off again it gets a word in the thread
instead. Messages that were waiting for the run are answered.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.approvals.service import ApprovalService
from bot.clock import Clock
from bot.conversation import Author, ThreadKey
from bot.engine.prompt import open_calls
from bot.llm.messages import Message, ToolResult, UserMessage
from bot.present.approval_card import update_card
from bot.present.surface import Surface
from bot.runner import Runner
from bot.sessions.model import RunState, Session
from bot.storage.protocol import Store
from bot.threads import ThreadLocks

log = logging.getLogger(__name__)

INTERRUPTED = "interrupted: the run stopped before this tool reported back; its outcome is unknown."
RESTARTED = (
    "I was restarted while working on this, so my last answer may be incomplete. "
    "Send a message to go on."
)
RESUMING = "I was restarted while working on this; picking up where I left off."
CUT_OFF = (RunState.RUNNING, RunState.RESUMED)


class Recovery:
    def __init__(
        self,
        store: Store,
        approvals: ApprovalService,
        runner: Runner,
        clock: Clock,
        locks: ThreadLocks,
    ) -> None:
        self._store = store
        self._approvals = approvals
        self._runner = runner
        self._clock = clock
        self._locks = locks

    async def cut_off(self) -> list[ThreadKey]:
        """The threads whose run a restart cut off, oldest first."""
        return [k for state in CUT_OFF for k in await self._store.keys_in_state(state)]

    async def recover(self, key: ThreadKey, surface: Surface) -> None:
        """Mend one thread cut off mid-run (its surface reaches it without an incoming event)."""
        async with self._locks.hold(key):
            session = await self._store.load_session(key, self._clock.now())
            if session.state not in CUT_OFF:
                return
            again = session.state is RunState.RESUMED
            await self.repair(session, surface)
            session.state = RunState.IDLE
            await self._store.save_state(session)
            if session.inbox:
                first = session.inbox[0]
                arrived, session.inbox = session.inbox, []
                await self._store.append_messages(session, arrived)
                await self._runner.drive(session, _author_of(first), surface)
            elif not again and (asked := _unanswered(session.messages)) is not None:
                await self._runner.drive(
                    session, _author_of(asked), surface, notice=RESUMING, state=RunState.RESUMED
                )
            else:
                await self._runner.say(session, surface, RESTARTED)

    async def repair(self, session: Session, surface: Surface | None) -> None:
        """After a crash mid-run, give every open tool call an 'interrupted' result (and expire
        the approvals of those calls): nothing with side effects is re-run silently."""
        if session.state is RunState.AWAITING_APPROVAL:
            return
        missing = open_calls(session.messages)
        if not missing:
            return
        log.warning("repairing %d interrupted tool calls in %s", len(missing), session.key)
        await self.expire_approvals(session, surface)
        results = [ToolResult(call_id=c.id, name=c.name, content=INTERRUPTED, is_error=True) for c in missing]
        await self._store.append_messages(session, results)

    async def expire_approvals(self, session: Session, surface: Surface | None) -> None:
        """Expire the pending approvals of the session's open calls, and say so on their cards."""
        calls = open_calls(session.messages)
        found = await self._store.approvals_for(session.key, [c.id for c in calls])
        for request in found.values():
            if (expired := await self._approvals.expire(request.id)) is not None and surface:
                await update_card(surface, self._clock, expired)


def _author_of(message: UserMessage) -> Author:
    return Author(message.author_id or "", message.author_name or "someone")


def _unanswered(messages: Sequence[Message]) -> UserMessage | None:
    """The message whose answer a cut-off run left unfinished (the transcript ends with it or
    with tool results of the run answering it); None when the last answer is complete."""
    if not messages or not isinstance(messages[-1], UserMessage | ToolResult):
        return None
    return next((m for m in reversed(messages) if isinstance(m, UserMessage)), None)
