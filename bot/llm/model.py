"""The model port: a streamed chat completion, as vendor-neutral pieces."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from bot.infra.text import valid_text
from bot.llm.messages import Message, Usage


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model is told about one tool."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    """JSON schema of the arguments object."""


@dataclass(frozen=True, slots=True)
class TextPiece:
    text: str

    def __post_init__(self) -> None:  # a model may send a lone surrogate: made valid here
        object.__setattr__(self, "text", valid_text(self.text))


@dataclass(frozen=True, slots=True)
class ToolCallPiece:
    """A fragment of a tool call; fragments with the same index belong together."""

    index: int
    id: str | None
    name: str | None
    arguments: str
    problem: str = ""
    """Why the call cannot run (a call written as text that could not be read): the model is
    answered with this error instead."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "arguments", valid_text(self.arguments))
        if self.name is not None:
            object.__setattr__(self, "name", valid_text(self.name))
        if self.id is not None:
            object.__setattr__(self, "id", valid_text(self.id))


@dataclass(frozen=True, slots=True)
class ThinkingPiece:
    """The model reasons before it answers (``reasoning_content`` or ``reasoning`` deltas). Its
    text is not kept: only how many characters arrived."""

    chars: int


@dataclass(frozen=True, slots=True)
class UsagePiece:
    usage: Usage


@dataclass(frozen=True, slots=True)
class FinishPiece:
    reason: str | None


@dataclass(frozen=True, slots=True)
class NoticePiece:
    """Something the thread should be told about how the answer came (another model took over)."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningPiece:
    """One reasoning item the model produced (its JSON; the content encrypted), to be sent back
    with the conversation."""

    item: str


@dataclass(frozen=True, slots=True)
class WaitPiece:
    """The model server asked to wait (``Retry-After``): the call is tried again after
    ``seconds``. Comes before any other piece of the answer."""

    seconds: float


ModelPiece = (
    TextPiece
    | ThinkingPiece
    | ToolCallPiece
    | UsagePiece
    | FinishPiece
    | NoticePiece
    | ReasoningPiece
    | WaitPiece
)


@dataclass(frozen=True, slots=True)
class Sampling:
    """How the model samples its answer; a value left None is not sent (the server decides)."""

    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    reasoning_effort: str | None = None

    def sent(self) -> dict[str, float | int | str]:
        """The request fields these set, in a fixed order."""
        return {
            name: value
            for name in ("temperature", "top_p", "seed", "reasoning_effort")
            if (value := getattr(self, name)) is not None
        }


DEFAULT_SAMPLING = Sampling()


@dataclass(frozen=True, slots=True)
class ModelRequest:
    system: str
    messages: Sequence[Message]
    tools: Sequence[ToolSpec]
    max_tokens: int | None = None
    model: str | None = None
    """The model to ask (a thread's or channel's choice); None: the model's own name."""
    sampling: Sampling = DEFAULT_SAMPLING


class Model(Protocol):
    """A chat model that streams. Raises :class:`bot.errors.ModelError` subclasses."""

    @property
    def name(self) -> str: ...

    @property
    def label(self) -> str:
        """How the model is named to people (``gpt-4o-mini``, ``demo model (offline)``)."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]: ...

    async def aclose(self) -> None: ...
