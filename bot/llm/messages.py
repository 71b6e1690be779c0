"""Vendor-neutral conversation messages, persisted as JSON.

The Chat Completions wire format is produced from these in :mod:`bot.llm.wire` only, the
Responses API's in :mod:`bot.llm.responses_wire`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolCall(_Frozen):
    id: str
    """Our own id, unique in the session (``call_…``)."""
    wire_id: str
    """The id sent to the provider: its own when usable, else ours."""
    name: str
    arguments: str
    """The raw JSON text the model produced (may be invalid: the tool layer reports that)."""


class SystemMessage(_Frozen):
    role: Literal["system"] = "system"
    text: str


class UserMessage(_Frozen):
    role: Literal["user"] = "user"
    text: str
    author_id: str | None = None
    author_name: str | None = None
    event_id: str | None = None
    """The platform delivery it came in (its arrival is done once it is in the session)."""
    earlier: str | None = None
    """What the thread said before the bot was first mentioned there (read once from the
    platform); the model reads it just before this message."""
    images: tuple[str, ...] = ()
    """Images shared with the message, as ``data:`` URLs, for a model that sees images."""
    addressed: bool = True
    """It mentions the bot (or is in a direct message); False: a message of the thread that
    does not, kept as context when the thread answers mentions only."""
    message_id: str | None = None
    """The platform's id of the message (a Slack ``ts``, a Discord message id): what an edit
    of it names."""
    edit: bool = False
    """A new text its author gave the message ``message_id``, not a message of its own: an
    arrival only, never in a transcript (:mod:`bot.thread.edits`)."""


class AssistantMessage(_Frozen):
    role: Literal["assistant"] = "assistant"
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    stopped: bool = False
    """The run was stopped while this message was streaming; the text is partial."""
    reasoning: tuple[str, ...] = ()
    """The model's reasoning items before this answer (Responses API: each item's JSON, its
    content encrypted by the provider), sent back with the thread's later requests."""


class ToolResult(_Frozen):
    role: Literal["tool"] = "tool"
    call_id: str
    """Our id of the call this answers."""
    name: str
    content: str
    is_error: bool = False


class Summary(_Frozen):
    """Replaces older messages after compaction."""

    role: Literal["summary"] = "summary"
    text: str
    replaced: int


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolResult | Summary,
    Field(discriminator="role"),
]
MESSAGE_ADAPTER: TypeAdapter[Message] = TypeAdapter(Message)


class Usage(_Frozen):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
        )

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def dump_message(message: Message) -> str:
    return message.model_dump_json()


def load_message(raw: str | bytes) -> Message:
    return MESSAGE_ADAPTER.validate_json(raw)
