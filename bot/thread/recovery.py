"""What a restart leaves behind, mended: tool calls without a result, and runs cut off.

Every open tool call gets an "interrupted" result (and its approval, if any, expires): nothing with
side effects is re-run silently. A call that waited for an approval or for a person's sign-in to
an MCP server (:mod:`bot.mcp.sign_in_waits`) has not run: its run is paused and waits on. A run cut off by a restart is picked up where it left off, once:
the session says ``resumed`` while it runs, and cut off again it gets a word in the thread
instead. Messages that were waiting for the run are answered.

What the run left live in the thread is mended from what the session kept of it
(:mod:`bot.present.mend`), never read back from the platform: no Stop button and no open stream
outlives the crash.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.api.inbound import Author, ThreadKey
from bot.api.surface import Surface
from bot.approvals import inline_waits as asking
from bot.approvals.decisions import Decisions
from bot.engine.prompt import open_calls
from bot.llm.messages import Message, ToolResult, UserMessage
from bot.present.mend import mend
from bot.sessions.model import RunState, Session
from bot.thread.hold import Holds
from bot.thread.line import Place
from bot.thread.runs import Supervisor

log = logging.getLogger(__name__)

INTERRUPTED = "interrupted: the run stopped before this tool reported back; its outcome is unknown."
RESTARTED = (
    "I was restarted while working on this, so my last answer may be incomplete. "
    "Send a message to go on."
)
RESUMING = "I was restarted while working on this; picking up where I left off."
CUT_OFF = (RunState.RUNNING, RunState.RESUMED)


class Recovery:
    def __init__(self, holds: Holds, decisions: Decisions, supervisor: Supervisor) -> None:
        self._holds = holds
        self._store = holds.sessions
        self._decisions = decisions
        self._supervisor = supervisor

    async def cut_off(self) -> list[ThreadKey]:
        """The threads whose run a restart cut off, oldest first."""
        return [k for state in CUT_OFF for k in await self._store.keys_in_state(state)]

    async def recover(
        self, key: ThreadKey, surface: Surface, place: Place[ThreadKey] | None = None
    ) -> None:
        """Mend one thread cut off mid-run (its surface reaches it without an incoming event),
        in its ``place`` in the thread's line when one was reserved."""
        # None: another worker has it in hand
        async with self._holds.session(key, place=place) as session:
            if session is None or session.state not in CUT_OFF:
                return
            again = session.state is RunState.RESUMED
            await self.repair(session, surface)
            if session.state is RunState.AWAITING_APPROVAL:
                return  # the click resumes it
            # until the run below stores its own state, the thread stays cut off: a crash in
            # between finds it so again
            if session.inbox:
                first = session.inbox[0]
                arrived, session.inbox = session.inbox, []
                session.state = RunState.RUNNING
                await self._store.append_messages(session, arrived)
                await self._supervisor.drive(session, _author_of(first), surface)
            elif not again and (asked := _unanswered(session.messages)) is not None:
                await self._supervisor.drive(
                    session, _author_of(asked), surface, notice=RESUMING, state=RunState.RESUMED
                )
            else:
                session.state = RunState.IDLE
                await self._store.save_state(session)
                await self._supervisor.say(session, surface, RESTARTED)

    async def paused(self, key: ThreadKey, surface: Surface) -> None:
        """Mend one thread whose run a restart found paused: the Stop buttons its run left go,
        and a run whose calls were all decided before the restart goes on."""
        async with self._holds.session(key) as session:
            if session is None or session.state is not RunState.AWAITING_APPROVAL:
                return
            await self._mend_live(session, surface)
        await self._decisions.recover(key, surface)

    async def repair(self, session: Session, surface: Surface | None) -> None:
        """After a crash mid-run, give every open tool call an 'interrupted' result (and expire
        the approvals of those calls): nothing with side effects is re-run silently."""
        if session.state is RunState.AWAITING_APPROVAL:
            return
        await self._mend_live(session, surface)
        await asking.close(
            self._decisions, session, surface, asking.RESTARTED
        )  # what a sub-agent waited for
        missing = open_calls(session.messages)
        if not missing:
            return
        if (await self._decisions.batch(session, surface)).waiting:
            # cut off while it paused (its card posted, the pause not yet stored), or while a
            # call waited for a person's sign-in: it still waits for the decision or the
            # sign-in (whose callback resumes it), and a call that waits has not run
            session.state = RunState.AWAITING_APPROVAL
            await self._store.save_state(session)
            log.info("%s was cut off while waiting for a person; it waits for them", session.key)
            return
        missing = open_calls(session.messages)  # a sign-in that expired ended its call
        if not missing:
            return
        log.warning("repairing %d interrupted tool calls in %s", len(missing), session.key)
        await self._decisions.expire_open(session, surface)
        results = [
            ToolResult(call_id=c.id, name=c.name, content=INTERRUPTED, is_error=True)
            for c in missing
        ]
        await self._store.append_messages(session, results)

    async def _mend_live(self, session: Session, surface: Surface | None) -> None:
        """What a run a restart cut off left live goes to rest: its Stop buttons, its
        "Working…" and control messages, its open streams (best effort: a message may be gone)."""
        if not session.live_messages or surface is None:
            return
        budget = self._supervisor.budgets.get(surface.limits)
        for live in session.live_messages:
            await mend(surface, live, budget)
        session.live_messages = []
        await self._store.save_state(session)


def _author_of(message: UserMessage) -> Author:
    return Author(message.author_id or "", message.author_name or "someone")


def _unanswered(messages: Sequence[Message]) -> UserMessage | None:
    """The message whose answer a cut-off run left unfinished (the transcript ends with it or
    with tool results of the run answering it); None when the last answer is complete."""
    if not messages or not isinstance(messages[-1], UserMessage | ToolResult):
        return None
    return next((m for m in reversed(messages) if isinstance(m, UserMessage)), None)
