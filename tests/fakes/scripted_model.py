"""A model that plays back a script, for engine tests: each call takes the next step."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from bot.llm.messages import Usage
from bot.llm.model import (
    FinishPiece,
    ModelPiece,
    ModelRequest,
    TextPiece,
    ToolCallPiece,
    UsagePiece,
)


def text(*parts: str, usage: Usage | None = None) -> list[ModelPiece]:
    pieces: list[ModelPiece] = [TextPiece(p) for p in parts]
    pieces.append(UsagePiece(usage or Usage(prompt_tokens=10, completion_tokens=len(parts))))
    pieces.append(FinishPiece("stop"))
    return pieces


def call(
    name: str,
    arguments: object | str,
    *,
    index: int = 0,
    provider_id: str | None = "call_0",
    say: str = "",
) -> list[ModelPiece]:
    """A tool call whose JSON arrives in three fragments."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    third = max(1, len(raw) // 3)
    pieces: list[ModelPiece] = [TextPiece(say)] if say else []
    pieces.append(ToolCallPiece(index, provider_id, name, raw[:third]))
    pieces.append(ToolCallPiece(index, None, None, raw[third : 2 * third]))
    pieces.append(ToolCallPiece(index, None, None, raw[2 * third :]))
    return pieces


def step(*groups: Sequence[ModelPiece]) -> list[ModelPiece]:
    out: list[ModelPiece] = [p for g in groups for p in g]
    out.append(UsagePiece(Usage(prompt_tokens=10, completion_tokens=5)))
    out.append(FinishPiece("tool_calls"))
    return out


Step = list[ModelPiece] | Exception | tuple[list[ModelPiece], Exception]


@dataclass
class ScriptedModel:
    steps: list[Step]
    requests: list[ModelRequest] = field(default_factory=list)
    name: str = "scripted"
    label: str = "scripted model"
    default: Step | None = None
    respond: Callable[[ModelRequest], Step] | None = None
    """Answers every call not covered by ``steps``, from the request."""
    max_calls: int = 500
    """More calls than this fail the test instead of letting a broken loop run on forever."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        self.requests.append(
            ModelRequest(
                request.system,
                list(request.messages),
                list(request.tools),
                request.max_tokens,
                request.model,
                request.sampling,
            )
        )
        if len(self.requests) > self.max_calls:
            raise AssertionError(f"the model was called more than {self.max_calls} times")
        if self.steps:
            current = self.steps.pop(0)
        elif self.respond is not None:
            current = self.respond(request)
        elif self.default is not None:
            current = self.default
        else:
            raise AssertionError("the model was called more often than scripted")
        if isinstance(current, Exception):
            raise current
        pieces, error = current if isinstance(current, tuple) else (current, None)
        for piece in pieces:
            yield piece
        if error is not None:
            raise error

    async def aclose(self) -> None:
        return None
