"""The tool calls of a run's round (a part of :class:`bot.engine.loop._Run`): each call run,
refused or held for a person's approval, in call order; calls of different lanes side by side;
every result recorded, so the transcript stays consistent whatever happens, a Stop included."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection, Coroutine, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from bot.engine.activity import preview, summarise
from bot.engine.events import (
    ApprovalNeeded,
    CallAllowed,
    EventSink,
    TodosChanged,
    ToolFinished,
    ToolStarted,
)
from bot.engine.gate import Proceed, Refuse, Wait
from bot.engine.prompt import open_calls
from bot.engine.states import CallModel, Pause, State
from bot.infra import metrics
from bot.llm.messages import AssistantMessage, Message, ToolCall, ToolResult
from bot.sessions.model import RunState, Session
from bot.tools.base import Tool, ToolContext, ToolError

if TYPE_CHECKING:
    from bot.engine.loop import Deps

log = logging.getLogger(__name__)

MAX_TOOL_OUTPUT = 20_000
STOPPED_RESULT = "stopped: the run was stopped before this call finished; its outcome is unknown."
CUT_RESULT = (
    "error: your answer was cut off by the output token limit while writing this call, so its "
    "arguments may be incomplete; it was not run. Make the call again, shorter if needed."
)
_HELD = object()
_WAITING = object()


class ToolRounds:
    """The tool-calling half of a run; :class:`bot.engine.loop._Run` holds the state it uses."""

    deps: Deps
    session: Session
    sink: EventSink
    ctx: ToolContext
    _unsaved: list[Message]
    _cut: set[str]
    _unreadable: dict[str, str]
    _shown: str

    def _tool(self, name: str) -> Tool | None:
        """The tool ``name`` as the thread is offered it now (the run's)."""
        raise NotImplementedError

    async def _persist(self, messages: Sequence[Message]) -> None:
        """Append ``messages`` to the stored transcript (the run's)."""
        raise NotImplementedError

    async def run_tools(self, round: int, calls: tuple[ToolCall, ...]) -> State:
        """Run the calls in order; a call waiting for approval holds back the calls after it.

        A call that proceeds with nothing to ask and no side effect (or of a concurrent tool:
        ``delegate_task``, each call its own lane) starts beside the ones before it when they
        are of other lanes (other toolkits, other plain tools); calls of one lane run one after
        another. Results are recorded in call order either way."""
        before = self.session.todos
        waiting = False
        flight = Flight() if len(calls) > 1 else None
        try:
            for call in calls:
                if await self._gated(call, blocked=waiting, flight=flight) is _WAITING:
                    waiting = True
            await self._land(flight)
        finally:
            if flight is not None:
                await flight.cancel()  # a stop: what still runs ends now (answered as stopped)
        await self._save_unsaved()
        if self.session.todos is not before:  # stored with the result of the call that changed them
            await self.sink(TodosChanged(self.session.todos))
        return Pause() if waiting else CallModel(round + 1)

    async def _save_unsaved(self) -> None:
        if self._unsaved:
            await self._persist(self._unsaved)
            self._unsaved = []  # kept until stored: a stop during the write stores it then

    async def _gated(
        self, call: ToolCall, *, blocked: bool, flight: Flight | None = None
    ) -> object:
        """Run, refuse or hold the call: its result is recorded, or ``_WAITING`` when it waits
        for a person, or ``_HELD`` when an earlier call waits (it runs after that one, in order),
        or it is started in ``flight`` (its result recorded when the flight lands).
        Calls whose arguments are invalid, over their limits or cut off never reach the gate."""
        lane = self.deps.tools.lane(call.name, call.id)
        if flight is not None and lane in flight.lanes:
            await self._land(flight)  # it sees what the earlier call of its lane changed
        tool, args, refusal = self._prepared(call)
        beside = (
            flight is not None
            and tool is not None
            and args is not None
            and not blocked
            and (tool.concurrent or self.deps.gate.free(self.ctx, tool))
        )
        if not beside:
            await self._land(flight)  # what runs now comes after every earlier result
        if tool is None or args is None:
            return await self._refused(call, refusal)
        match await self.deps.gate.check(self.ctx, call, tool):
            case Wait(request, new):
                await self._land(flight)
                if new:
                    await self._pausing()
                    await self.sink(ApprovalNeeded(request))
                return _WAITING
            case Refuse(text):
                await self._land(flight)
                return await self._refused(call, text)
            case Proceed() if blocked:
                return _HELD
            case Proceed(allowed_by) if beside and flight is not None:
                await self._shown_first(call, allowed_by)
                await self.sink(ToolStarted(call.id, call.name, call.arguments))
                flight.start(lane, call, tool, self._invoke(call, tool, args))
                return None
            case Proceed(allowed_by):
                await self._shown_first(call, allowed_by)
                return await self._run_one(call, tool, args)

    async def _shown_first(self, call: ToolCall, allowed_by: str) -> None:
        """A call a rule lets run without a card is shown in full before it runs."""
        if allowed_by:
            await self.sink(CallAllowed(call.id, call.name, call.arguments, allowed_by))

    def _prepared(self, call: ToolCall) -> tuple[Tool | None, BaseModel | None, str]:
        """The tool the call names (as this thread is offered it now) and its arguments, or
        why it cannot run."""
        tool = self._tool(call.name)
        if problem := self._unreadable.get(call.id):
            return tool, None, problem
        if tool is None:
            known = (
                ", ".join(n for n in self.deps.tools.names if self.deps.config.offers(n)) or "none"
            )
            return (
                None,
                None,
                f"error: there is no tool named {call.name!r}. Available tools: {known}.",
            )
        if call.id in self._cut:
            return tool, None, CUT_RESULT
        try:
            return tool, tool.parse(call.arguments), ""
        except ToolError as exc:
            return tool, None, f"error: {exc}"

    async def _land(self, flight: Flight | None) -> None:
        """Record the results of the calls running in ``flight``, in call order."""
        if flight is None:
            return
        while flight.running:
            call, tool, task = flight.running[0]
            content, is_error = await task
            flight.running.pop(0)
            await self._finished(call, tool, content, is_error)
        flight.lanes.clear()

    async def _pausing(self) -> None:
        """The run will pause for a person: stored before any card shows, so that a restart
        between a card and the end of the run finds the run paused (a click then resumes it)
        and never takes its approved calls for ones cut off while running. Nothing of the run
        runs after this: later calls of the batch are held until the decisions."""
        if self.session.state is not RunState.AWAITING_APPROVAL:
            await self._save_unsaved()
            self.session.state = RunState.AWAITING_APPROVAL
            self.session.updated_at = self.deps.clock.now()
            await self.deps.store.save_state(self.session)

    async def _refused(self, call: ToolCall, text: str) -> ToolResult:
        """A call that does not run: its error is recorded, then announced."""
        result = await self._record(call, text)
        await self.sink(ToolFinished(call.id, call.name, True))
        return result

    async def _record(self, call: ToolCall, content: str, *, is_error: bool = True) -> ToolResult:
        """Store the call's result (with its batch, for calls without side effects)."""
        if len(content) > MAX_TOOL_OUTPUT:
            cut = len(content) - MAX_TOOL_OUTPUT
            content = f"{content[:MAX_TOOL_OUTPUT]}\n[output cut: {cut} more characters]"
        result = ToolResult(call_id=call.id, name=call.name, content=content, is_error=is_error)
        if self._unsaved:
            self._unsaved.append(result)
        else:
            await self._persist([result])
        return result

    async def stopped(self, keep: Collection[str] = ()) -> None:
        """The run was cancelled: keep the partial text and answer the open calls (but
        ``keep``)."""
        await self._save_unsaved()
        if self._shown:
            await self._persist([AssistantMessage(text=self._shown, stopped=True)])
        missing = [c for c in open_calls(self.session.messages) if c.id not in keep]
        await self._persist(
            [
                ToolResult(call_id=c.id, name=c.name, content=STOPPED_RESULT, is_error=True)
                for c in missing
            ]
        )

    async def _run_one(self, call: ToolCall, tool: Tool, args: BaseModel) -> ToolResult:
        await self.sink(ToolStarted(call.id, call.name, call.arguments))
        content, is_error = await self._invoke(call, tool, args)
        return await self._finished(call, tool, content, is_error)

    async def _invoke(self, call: ToolCall, tool: Tool, args: BaseModel) -> tuple[str, bool]:
        """Run the tool: its output, and whether it failed."""
        began = time.perf_counter()
        try:
            content, is_error = await tool.invoke(replace(self.ctx, call_id=call.id), args), False
        except ToolError as exc:
            content, is_error = f"error: {exc}", True
        except Exception as exc:  # a tool's bug is a result the model sees, not a crashed run
            log.warning("tool %s raised", call.name, exc_info=True)
            content, is_error = f"error: {call.name} failed: {type(exc).__name__}: {exc}", True
        metrics.tool_ran(tool.name, is_error=is_error, began=began)
        return content, is_error

    async def _finished(
        self, call: ToolCall, tool: Tool, content: str, is_error: bool
    ) -> ToolResult:
        result = await self._record(call, content, is_error=is_error)  # recorded, then announced
        said = summarise(content, is_error=is_error)
        people = self.ctx.previews.pop(call.id, content)
        shown = preview(people) if tool.side_effects else ""
        await self.sink(ToolFinished(call.id, call.name, is_error, said, shown, tool.side_effects))
        return result


class Flight:
    """Calls of one batch running side by side, at most one per lane, in call order."""

    def __init__(self) -> None:
        self.lanes: set[str] = set()
        self.running: list[tuple[ToolCall, Tool, asyncio.Task[tuple[str, bool]]]] = []

    def start(
        self, lane: str, call: ToolCall, tool: Tool, work: Coroutine[Any, Any, tuple[str, bool]]
    ) -> None:
        self.lanes.add(lane)
        self.running.append((call, tool, asyncio.create_task(work, name=f"tool {call.name}")))

    async def cancel(self) -> None:
        """End the calls still running (the run was stopped or failed while they ran)."""
        tasks = [task for _, _, task in self.running]
        self.running.clear()
        self.lanes.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
