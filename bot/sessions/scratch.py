"""Sessions kept in memory only: a sub-agent's mini-session, which lives as long as its
``delegate_task`` call (a restart ends the call, and the parent's transcript says so)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.api.inbound import ThreadKey
from bot.llm.messages import Message
from bot.sessions.model import RunState, Session


class ScratchSessions:
    """A :class:`~bot.sessions.store.SessionStore` that writes nowhere but the session object
    it is given: nothing of it is found again (a new one is empty, none is cut off)."""

    async def load_session(self, key: ThreadKey, now: float) -> Session:
        return Session(key, created_at=now, updated_at=now)

    async def has_session(self, key: ThreadKey) -> bool:
        return False

    async def append_messages(self, session: Session, messages: Sequence[Message]) -> None:
        session.messages.extend(messages)

    async def replace_messages(self, session: Session, messages: Sequence[Message]) -> None:
        session.messages = list(messages)

    async def save_state(self, session: Session) -> None:
        return None

    async def keys_in_state(self, state: RunState, limit: int = 1000) -> list[ThreadKey]:
        return []
