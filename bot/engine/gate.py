"""What the engine asks before running a tool call: go ahead, refuse, or wait for a person."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bot.approvals.models import ApprovalRequest
from bot.llm.messages import ToolCall
from bot.tools.base import Tool, ToolContext


@dataclass(frozen=True, slots=True)
class Proceed:
    allowed_by: str = ""
    """Why a call that would have asked runs without a card (an "Always allow" rule, in
    words): the thread then shows the call in full before it runs. Empty: nothing was asked,
    or a person approved this very call on its card."""


@dataclass(frozen=True, slots=True)
class Refuse:
    text: str
    """The result the model sees instead of the tool's output."""


@dataclass(frozen=True, slots=True)
class Wait:
    request: ApprovalRequest
    new: bool
    """Created by this check (its card must be shown)."""


Verdict = Proceed | Refuse | Wait


class Gate(Protocol):
    async def check(self, ctx: ToolContext, call: ToolCall, tool: Tool) -> Verdict: ...

    def free(self, ctx: ToolContext, tool: Tool) -> bool:
        """Whether every call of ``tool`` here proceeds with nothing to ask and no side effect
        (its calls may then be stored with their results, in one transaction)."""
        ...


class OpenGate:
    """Runs every call (tests and tools without side effects)."""

    async def check(self, ctx: ToolContext, call: ToolCall, tool: Tool) -> Verdict:
        return Proceed()

    def free(self, ctx: ToolContext, tool: Tool) -> bool:
        return not tool.side_effects
