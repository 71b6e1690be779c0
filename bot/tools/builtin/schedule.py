"""``schedule_prompt``, ``list_schedules``, ``cancel_schedule``: prompts for later, as a toolkit
that follows each thread's schedules (``cancel_schedule`` is offered only where there is one to
cancel, and its ``schedule_id`` lists the thread's ids)."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from bot.api.inbound import Author
from bot.errors import Refused
from bot.scheduler.prompts import MAX_PROMPT_CHARS, PromptSchedules
from bot.scheduler.when import local_time
from bot.tools.base import Offers, Tool, ToolContext, ToolError, one_id_schema, tool

NAMES = ("schedule_prompt", "list_schedules", "cancel_schedule")
"""Its tools' names: offered as they are, without the toolkit's prefix."""
NO_STATE: Mapping[str, Any] = MappingProxyType({})
ID_HELP = "The id of the schedule to cancel (list_schedules shows them)."


class CancelArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schedule_id: str = Field(min_length=1, max_length=40, description=ID_HELP)


class ScheduleToolkit:
    name = "threadline.schedules"

    def __init__(self, schedules: PromptSchedules) -> None:
        self._schedules = schedules
        self._fixed = {t.name: t for t in _fixed_tools(schedules)}
        self._cancel: Offers[tuple[str, ...], Tool] = Offers(
            lambda ids: _cancel_tool(schedules, ids)  # any id, when empty
        )

    def version(self, key: str | None, state: Mapping[str, Any] = NO_STATE) -> Hashable:
        return () if key is None else self._schedules.cached_ids(key)

    def tools(self, key: str | None, state: Mapping[str, Any] = NO_STATE) -> Mapping[str, Tool]:
        if key is None:
            return {**self._fixed, "cancel_schedule": self._cancel.get(())}
        ids = self._schedules.cached_ids(key)
        return {**self._fixed, "cancel_schedule": self._cancel.get(ids)} if ids else self._fixed

    def missing(self, key: str | None, name: str, state: Mapping[str, Any] = NO_STATE) -> str:
        if name == "cancel_schedule":
            return "there is no schedule in this thread to cancel."
        return f"there is no tool named {name!r}."

    def instructions(self, state: Mapping[str, Any] = NO_STATE) -> str:
        return ""

    def status(self, state: Mapping[str, Any] = NO_STATE) -> list[str]:
        return []


def _fixed_tools(schedules: PromptSchedules) -> list[Tool]:
    zone = schedules.zone.key

    @tool(side_effects=True, approval="never")
    async def schedule_prompt(
        ctx: ToolContext,
        prompt: Annotated[str, Field(min_length=1, max_length=MAX_PROMPT_CHARS)],
        when: Annotated[str, Field(min_length=1, max_length=200)],
    ) -> str:
        """Schedule a prompt to run later in this thread, as a new message from the person
        who asked (their approvals stay theirs). The answer says when it runs next.

        Args:
            prompt: What to do then, written as a request to you ("check the build and report").
            when: "in 10 minutes" / "in 2 hours" / "in 3 days"; an ISO 8601 time
                ("2026-05-01T09:00", without a zone it is in the bot's zone); or a five-field
                cron expression for a recurring prompt ("0 9 * * 1-5": weekdays at 9:00).
        """
        author = ctx.requester or Author("", "someone")
        try:
            added = await schedules.create(ctx.thread_key, author, prompt, when)
        except Refused as exc:
            raise ToolError(str(exc)) from None
        next_run = local_time(added.next_at, schedules.zone)
        rhythm = f", then by cron `{added.cron}`" if added.cron else " (once)"
        return f"Scheduled {added.id}: next run {next_run} ({schedules.zone.key}){rhythm}."

    schedule_prompt = _with_zone(schedule_prompt, zone)

    @tool
    async def list_schedules(ctx: ToolContext) -> str:
        """List the prompts scheduled in this thread (id, next run, rhythm, who, what) and
        the current time."""
        return await schedules.listing(ctx.thread_key)

    return [schedule_prompt, list_schedules]


def _with_zone(item: Tool, zone: str) -> Tool:
    """Say in the description which zone times without one are read in."""
    return dataclasses.replace(
        item, description=f"{item.description} Times without a zone are in {zone}."
    )


def _cancel_tool(schedules: PromptSchedules, ids: tuple[str, ...]) -> Tool:
    async def cancel_schedule(ctx: ToolContext, **arguments: Any) -> str:
        try:
            removed = await schedules.cancel(ctx.thread_key, str(arguments["schedule_id"]))
        except Refused as exc:
            raise ToolError(str(exc)) from None
        return f"Cancelled {removed.id} ({removed.when}): it will not run."

    schema = one_id_schema("schedule_id", ID_HELP, ids)
    return Tool(
        "cancel_schedule",
        "Cancel one of this thread's scheduled prompts, so that it never runs again.",
        CancelArguments,
        cancel_schedule,
        side_effects=True,
        approval="never",
        schema=schema,
    )
