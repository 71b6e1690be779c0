"""``remember``, ``recall``, ``forget``: notes kept for a thread or its channel, as a toolkit that
follows what each thread sees (``forget`` is offered only where there is a memory, and its
``memory_id`` lists the ids when there are few enough to list)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from bot.api.inbound import Author
from bot.errors import Refused
from bot.memory.model import Scope
from bot.memory.service import MAX_NOTE_CHARS, Memories
from bot.tools.base import Offers, Tool, ToolContext, ToolError, one_id_schema, tool

NAMES = ("remember", "recall", "forget")
"""Its tools' names: offered as they are, without the toolkit's prefix."""
NO_STATE: Mapping[str, Any] = MappingProxyType({})
ID_HELP = "The id of the memory to forget (shown in the memory note and by recall)."


class ForgetArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    memory_id: str = Field(min_length=1, max_length=40, description=ID_HELP)


class MemoryToolkit:
    name = "threadline.memory"

    def __init__(self, memories: Memories) -> None:
        self._memories = memories
        self._fixed = {t.name: t for t in _fixed_tools(memories)}
        self._forget: Offers[tuple[str, ...] | None, Tool] = Offers(
            lambda ids: _forget_tool(memories, ids)
        )

    def version(self, key: str | None, state: Mapping[str, Any] = NO_STATE) -> Hashable:
        return () if key is None else self._memories.offered_ids(key)

    def tools(self, key: str | None, state: Mapping[str, Any] = NO_STATE) -> Mapping[str, Tool]:
        ids = None if key is None else self._memories.offered_ids(key)
        if ids == ():
            return self._fixed
        return {**self._fixed, "forget": self._forget.get(ids)}

    def missing(self, key: str | None, name: str, state: Mapping[str, Any] = NO_STATE) -> str:
        if name == "forget":
            return "there is no memory in this thread or its channel to forget."
        return f"there is no tool named {name!r}."

    def instructions(self, state: Mapping[str, Any] = NO_STATE) -> str:
        return ""

    def status(self, state: Mapping[str, Any] = NO_STATE) -> list[str]:
        return []


def _fixed_tools(memories: Memories) -> list[Tool]:
    @tool(side_effects=True, approval="never")
    async def remember(
        ctx: ToolContext,
        note: Annotated[str, Field(min_length=1, max_length=MAX_NOTE_CHARS)],
        scope: Scope = "thread",
    ) -> str:
        """Keep a short note for later: facts, decisions and preferences worth knowing in
        future conversations. Recent notes are shown to you before each step.

        Args:
            note: The note, self-contained and short (one fact or decision).
            scope: "thread": only this thread sees it; "channel": every thread of this
                channel does.
        """
        author = ctx.requester or Author("", "someone")
        try:
            kept = await memories.remember(ctx.thread_key, author, note, scope)
        except Refused as exc:
            raise ToolError(str(exc)) from None
        return f"Remembered as {kept.id} ({scope})."

    @tool
    async def recall(
        ctx: ToolContext, query: Annotated[str, Field(min_length=1, max_length=500)]
    ) -> str:
        """Search the memories of this thread and its channel (full text: every word of the
        query must start a word of the note). Returns the best matches with their ids.

        Args:
            query: Words to look for ("deploy key", "release date").
        """
        try:
            found = await memories.recall(ctx.thread_key, query)
        except Refused as exc:
            raise ToolError(str(exc)) from None
        if not found:
            return f"No memory matches {query!r}."
        return "\n".join(memories.describe(m) for m in found)

    return [remember, recall]


def _forget_tool(memories: Memories, ids: tuple[str, ...] | None) -> Tool:
    async def forget(ctx: ToolContext, **arguments: Any) -> str:
        try:
            removed = await memories.forget(ctx.thread_key, str(arguments["memory_id"]))
        except Refused as exc:
            raise ToolError(str(exc)) from None
        return f"Forgot {removed.id}."

    schema = one_id_schema("memory_id", ID_HELP, ids)
    return Tool(
        "forget",
        "Forget one memory of this thread or its channel.",
        ForgetArguments,
        forget,
        side_effects=True,
        approval="never",
        schema=schema,
    )
