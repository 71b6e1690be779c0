"""Assembling one streamed model response into an assistant message."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from bot.llm.messages import AssistantMessage, ToolCall, Usage


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass(slots=True)
class _PartialCall:
    provider_id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    problem: str = ""


@dataclass(slots=True)
class ResponseCollector:
    """Collects text and tool-call fragments (grouped by index) from one streamed response."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    usage: Usage | None = None
    finish_reason: str | None = None
    problems: dict[str, str] = field(default_factory=dict)
    """Our id of each call that cannot run, and why (set by :meth:`message`)."""
    reasoning: list[str] = field(default_factory=list)

    def add_text(self, text: str) -> None:
        self.text.append(text)

    def add_call_piece(
        self, index: int, provider_id: str | None, name: str | None, args: str, problem: str = ""
    ) -> None:
        call = self.calls.setdefault(index, _PartialCall())
        if problem:
            call.problem = problem
        if provider_id and not call.provider_id:
            call.provider_id = provider_id
        if name:
            call.name = name if not call.name else call.name
        if args:
            call.arguments.append(args)

    @property
    def shown_text(self) -> str:
        return "".join(self.text)

    def message(self, used_wire_ids: set[str]) -> AssistantMessage:
        """The assistant message, with our own call ids; the provider's id is kept for the wire
        when it is usable (present and not already used in this session)."""
        calls: list[ToolCall] = []
        for index in sorted(self.calls):
            part = self.calls[index]
            our_id = new_call_id()
            wire_id = part.provider_id
            if not wire_id or wire_id in used_wire_ids:
                wire_id = our_id
            used_wire_ids.add(wire_id)
            if part.problem:
                self.problems[our_id] = part.problem
            calls.append(
                ToolCall(
                    id=our_id, wire_id=wire_id, name=part.name, arguments="".join(part.arguments)
                )
            )
        return AssistantMessage(
            text=self.shown_text, tool_calls=tuple(calls), reasoning=tuple(self.reasoning)
        )
