"""The session of one thread, as the engine and the presenter see it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.api.inbound import ThreadKey
from bot.llm.messages import Message, Usage, UserMessage

TodoStatus = Literal["pending", "in_progress", "completed", "cancelled"]
"""``cancelled``: dropped without being done (denied, failed, or the run was stopped)."""
OPEN: frozenset[TodoStatus] = frozenset({"pending", "in_progress"})


class Todo(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    content: str = Field(min_length=1, max_length=500)
    status: TodoStatus = "pending"


def stopped(todos: tuple[Todo, ...]) -> tuple[Todo, ...]:
    """``todos`` after their run was stopped: what was still open is cancelled."""
    return tuple(
        t.model_copy(update={"status": "cancelled"}) if t.status in OPEN else t for t in todos
    )


class RunState(StrEnum):
    IDLE = "idle"
    RUNNING = "running"
    RESUMED = "resumed"
    """Running again after a restart cut it off: cut off once more, it is not resumed again."""
    AWAITING_APPROVAL = "awaiting_approval"


@dataclass(slots=True)
class PanelRef:
    """The thread's todo panel message on the platform."""

    message_id: str
    content_hash: str
    pinned: bool


@dataclass(frozen=True, slots=True)
class AnswerRef:
    """What the thread shows of the last answer: the person's message it answers (its
    platform id) and the bot's messages that hold it, first to last (the 👍 / 👎 under it
    included). An edit of that message marks them replaced (:mod:`bot.thread.edits`)."""

    to: str
    message_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LiveMessage:
    """A message the running run keeps live, and what a restart does with it.

    ``text``: what a reply showing the Stop button shows without it (rendered), put back with a
    note by the repair; ``""`` for a message that holds nothing of the answer (the "Working…"
    placeholder, the control message beside a native stream, a superseded draft), which is
    deleted; None for a record from before the text was kept (its buttons are dropped).
    ``stream``: a natively streamed message still open, which the repair stops."""

    message_id: str
    text: str | None = ""
    stream: bool = False


@dataclass(slots=True)
class Session:
    key: ThreadKey
    messages: list[Message] = field(default_factory=list)
    todos: tuple[Todo, ...] = ()
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    state: RunState = RunState.IDLE
    panel: PanelRef | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    inbox: list[UserMessage] = field(default_factory=list)
    """Messages that arrived during a run; the run's next model call takes them."""
    day: str = ""
    """The UTC day (``YYYY-MM-DD``) that ``day_tokens`` and ``day_cost_usd`` count."""
    day_tokens: int = 0
    day_cost_usd: float = 0.0
    live_messages: list[LiveMessage] = field(default_factory=list)
    """Messages of the running run that show its Stop button or still stream (the run's end
    leaves none; a restart mends those a crash left)."""
    toolkits: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each toolkit's state in this thread (a JSON object by toolkit name; see
    :mod:`bot.tools.state`), saved with the session."""
    model: str | None = None
    """The model chosen for this thread (``/threadline model``); None: its channel's."""
    quiet: bool = False
    """``/threadline quiet``: the thread is answered only when a message mentions the bot."""
    answer: AnswerRef | None = None
    """The messages of the last answer, and the person's message they answer."""

    def latest_person(self) -> UserMessage | None:
        """The transcript's latest message from a person."""
        return next((m for m in reversed(self.messages) if isinstance(m, UserMessage)), None)

    def answered(self, to: str | None, message_ids: tuple[str, ...]) -> None:
        """Messages posted by a run answering the person's message ``to`` (None: a message
        without a platform id): added to what answers it, or the answer of a later message."""
        if to is None:
            self.answer = None
            return
        kept = self.answer.message_ids if self.answer is not None and self.answer.to == to else ()
        shown = kept + tuple(m for m in message_ids if m not in kept)
        self.answer = AnswerRef(to, shown)
