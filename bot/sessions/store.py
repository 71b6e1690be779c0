"""What the core needs to keep a thread's session: its transcript and the state around it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from bot.api.home import RecentThread
from bot.api.inbound import ThreadKey
from bot.llm.messages import Message
from bot.sessions.model import RunState, Session


class SessionStore(Protocol):
    async def load_session(self, key: ThreadKey, now: float) -> Session:
        """The thread's session; a new empty one (not yet saved) if there is none."""
        ...

    async def has_session(self, key: ThreadKey) -> bool:
        """Whether the bot has joined the thread: it has a saved session, or a message accepted
        for it is on its way there."""
        ...

    async def append_messages(self, session: Session, messages: Sequence[Message]) -> None:
        """Add ``messages`` to the transcript and to ``session.messages``, and persist the rest
        of the session as :meth:`save_state` does, all in one transaction. Every write of a
        session also ends the arrivals of the messages it now holds (transcript or inbox)."""
        ...

    async def replace_messages(self, session: Session, messages: Sequence[Message]) -> None:
        """Replace the whole transcript (compaction, repair, reset), atomically."""
        ...

    async def save_state(self, session: Session) -> None:
        """Persist everything but the transcript: todos, usage, cost, run state, panel, inbox."""
        ...

    async def keys_in_state(self, state: RunState, limit: int = 1000) -> list[ThreadKey]:
        """Threads whose session is in ``state`` (``running`` after a crash), oldest first."""
        ...


class RecentThreads(Protocol):
    """Which thread of a channel was active last (``/threadline`` on Slack names no thread)."""

    async def latest_under(self, prefix: str) -> ThreadKey | None:
        """The thread whose key starts with ``prefix`` (a channel) and whose session changed
        last; None when there is none."""
        ...


class PersonThreads(Protocol):
    """The threads a person spoke in (Slack's App Home lists them). Each write of a transcript
    also keeps, for every author of its people's messages, the thread, their first words there
    (:func:`bot.storage.rows.spoken`) and when they last spoke."""

    async def threads_of(
        self, person: str, within: str = "", limit: int = 10
    ) -> list[RecentThread]:
        """The threads whose key is under ``within`` (a key's first parts, compared whole;
        every thread for ``""``) where ``person`` (an author id, ``slack:U123``) spoke, the one
        they spoke in last first; at most ``limit``."""
        ...
