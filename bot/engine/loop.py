"""The agent loop: a typed state machine with a hard turn limit.

    CallModel ──text only──▶ Finish
        │ tool calls
        ▼
    RunTools ──▶ CallModel (next turn) … ──turn limit──▶ WrapUp (one call, no tools) ──▶ Finish
        │ a call waits for a person's approval
        ▼
    Pause (the run ends; ``run(resume=True)`` later starts at RunTools with the open calls)
    any model failure ──▶ Fail

Messages that arrived during the run (``session.inbox``) join the transcript before the next
model call. Cancelling the task that runs the engine (a Stop) keeps the partial text, marked
stopped, and answers every open call, so the transcript stays consistent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from bot.clock import Clock
from bot.engine.collect import ResponseCollector
from bot.engine.compact import CompactionFailed, TokenGauge, compacted
from bot.engine.events import (
    ApprovalNeeded,
    EventSink,
    Failed,
    Finished,
    ModelCallStarted,
    TextDelta,
    TodosChanged,
    ToolFinished,
    ToolStarted,
)
from bot.engine.gate import Gate, OpenGate, Proceed, Refuse, Wait
from bot.engine.limits import charge, limit_reached
from bot.engine.messages import failure_text
from bot.engine.prompt import TURN_LIMIT_NOTE, open_calls, todo_note
from bot.engine.states import (
    CallModel,
    EngineConfig,
    Fail,
    Finish,
    Pause,
    RunResult,
    RunTools,
    State,
    WrapUp,
)
from bot.errors import ContextOverflow, ModelError
from bot.llm.messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolResult, Usage
from bot.llm.model import FinishPiece, Model, ModelRequest, TextPiece, ToolCallPiece, UsagePiece
from bot.sessions.model import Session
from bot.storage.protocol import Store
from bot.tools.base import ToolContext, ToolError
from bot.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

MAX_TOOL_OUTPUT = 20_000
STOPPED_RESULT = "stopped: the run was stopped before this call finished; its outcome is unknown."
_HELD = ToolResult(call_id="", name="", content="")


class Engine:
    def __init__(
        self,
        model: Model,
        tools: ToolRegistry,
        store: Store,
        clock: Clock,
        config: EngineConfig,
        gate: Gate | None = None,
    ) -> None:
        self._gate: Gate = gate or OpenGate()
        self._model = model
        self._tools = tools
        self._store = store
        self._clock = clock
        self._config = config

    async def run(
        self, session: Session, sink: EventSink, ctx: ToolContext, *, resume: bool = False
    ) -> RunResult:
        """Answer the transcript's last message; everything it produces is persisted as it goes.

        With ``resume``, first run the calls left open by a paused run (their approvals decided).
        """
        run = _Run(self, session, sink, ctx)
        waiting = open_calls(session.messages) if resume else []
        state: State = RunTools(1, tuple(waiting)) if waiting else CallModel(1)
        try:
            return await self._drive(run, state)
        except asyncio.CancelledError:
            await run.stopped()
            raise

    async def _drive(self, run: _Run, state: State) -> RunResult:
        sink = run.sink
        while True:
            match state:
                case CallModel(turn) if turn > self._config.max_turns:
                    state = WrapUp(turn)
                case CallModel(turn):
                    state = await run.call_model(turn, with_tools=True)
                case RunTools(turn, calls):
                    state = await run.run_tools(turn, calls)
                case WrapUp(turn):
                    state = await run.call_model(turn, with_tools=False)
                case Finish():
                    await sink(Finished(run.usage))
                    return RunResult(True, run.turns, run.usage)
                case Pause():
                    await sink(Finished(run.usage))
                    return RunResult(True, run.turns, run.usage, paused=True)
                case Fail(message):
                    await sink(Failed(message))
                    return RunResult(False, run.turns, run.usage, message)


class _Run:
    """The working state of one run."""

    def __init__(self, engine: Engine, session: Session, sink: EventSink, ctx: ToolContext) -> None:
        self.engine = engine
        self.session = session
        self.sink = sink
        self.ctx = ctx
        self.usage = Usage()
        self.turns = 0
        self._note_for: object = None
        self._note: SystemMessage | None = None
        self._shown = ""
        """Text of the model call in progress (kept, marked stopped, if the run is stopped)."""
        self.cost = 0.0
        self._gauge = TokenGauge()
        self._overflow_retried = False
        self._unsaved: list[Message] = []
        """An assistant message whose calls are all free (see :meth:`Gate.free`) and the results
        so far: stored together once the batch is done (one transaction per round trip)."""
        self._wire_ids: set[str] | None = None
        """Provider call ids used in the transcript (``None``: not gathered yet)."""

    def _messages(self, wrap_up: bool) -> Sequence[Message]:
        todos = self.session.todos
        if not todos and not wrap_up:
            return self.session.messages
        extra: list[Message] = []
        if todos:
            if self._note_for is not todos:
                self._note_for, self._note = todos, todo_note(todos)
            assert self._note is not None
            extra.append(self._note)
        if wrap_up:
            extra.append(SystemMessage(text=TURN_LIMIT_NOTE))
        return [*self.session.messages, *extra]

    async def call_model(self, turn: int, *, with_tools: bool) -> State:
        engine = self.engine
        self.turns = turn
        if self.session.inbox:  # messages that arrived meanwhile: the model reads them now
            arrived, self.session.inbox = self.session.inbox, []
            await self._persist(arrived)
        config = engine._config
        if (reached := limit_reached(config, self.usage, self.cost, self.session, engine._clock.now())):
            return Fail(reached)
        await self._compact_if_long()
        request = ModelRequest(
            system=engine._config.system_prompt,
            messages=self._messages(wrap_up=not with_tools),
            tools=engine._tools.specs() if with_tools else (),
            max_tokens=engine._config.max_output_tokens,
        )
        await self.sink(ModelCallStarted(turn))
        got = ResponseCollector()
        try:
            await self._stream(request, got)
        except ContextOverflow as exc:
            await self._account(got.usage)
            if got.shown_text or self._overflow_retried:
                return await self._failed(exc, got.shown_text)
            self._overflow_retried = True  # compact and try once more
            log.info("context overflow in %s: compacting and retrying", self.session.key)
            return CallModel(turn) if await self._compact() else await self._failed(exc, "")
        except ModelError as exc:
            log.warning("model call failed in %s: %s", self.session.key, exc)
            await self._account(got.usage)
            return await self._failed(exc, got.shown_text)
        self._shown = ""
        await self._account(got.usage)
        if got.usage is not None:
            self._gauge.observe(got.usage.prompt_tokens, got.usage.completion_tokens, len(request.messages))
        message = got.message(self._used_wire_ids())
        if not with_tools and message.tool_calls:
            message = AssistantMessage(text=message.text)
        if not message.text and not message.tool_calls:
            message = AssistantMessage(text="")
        if message.tool_calls and self._all_free(message.tool_calls):
            self._unsaved = [message]
        else:
            await self._persist([message])
        if message.tool_calls:
            return RunTools(turn, message.tool_calls)
        return Finish()

    def _used_wire_ids(self) -> set[str]:
        if self._wire_ids is None:
            self._wire_ids = {
                c.wire_id
                for m in self.session.messages
                if isinstance(m, AssistantMessage)
                for c in m.tool_calls
            }
        return self._wire_ids

    def _all_free(self, calls: Sequence[ToolCall]) -> bool:
        """No call can wait for a person or change anything outside the thread (an unknown
        tool only gives an error result)."""
        tools, gate = self.engine._tools, self.engine._gate
        return all((t := tools.get(c.name)) is None or gate.free(self.ctx, t) for c in calls)

    async def _stream(self, request: ModelRequest, got: ResponseCollector) -> None:
        async for piece in self.engine._model.stream(request):
            match piece:
                case TextPiece(text):
                    got.add_text(text)
                    self._shown = got.shown_text
                    await self.sink(TextDelta(text))
                case ToolCallPiece(index, provider_id, name, arguments):
                    got.add_call_piece(index, provider_id, name, arguments)
                case UsagePiece(usage):
                    got.usage = usage
                case FinishPiece(reason):
                    got.finish_reason = reason

    async def run_tools(self, turn: int, calls: tuple[ToolCall, ...]) -> State:
        """Run the calls in order; a call waiting for approval holds back the calls after it."""
        before = self.session.todos
        waiting = False
        for call in calls:
            result = await self._gated(call, blocked=waiting)
            if result is None:
                waiting = True
            elif result is not _HELD and self._unsaved:
                self._unsaved.append(result)
            elif result is not _HELD:
                await self._persist([result])
        await self._save_unsaved()
        if self.session.todos is not before:  # stored with the result of the call that changed them
            await self.sink(TodosChanged(self.session.todos))
        return Pause() if waiting else CallModel(turn + 1)

    async def _save_unsaved(self) -> None:
        if self._unsaved:
            await self._persist(self._unsaved)
            self._unsaved = []  # kept until stored: a stop during the write stores it then

    async def _gated(self, call: ToolCall, *, blocked: bool) -> ToolResult | None:
        """The call's result; None when it waits for a person; ``_HELD`` when an earlier call
        waits (it runs after that one, in order)."""
        tool = self.engine._tools.get(call.name)
        verdict = Proceed() if tool is None else await self.engine._gate.check(self.ctx, call, tool)
        match verdict:
            case Wait(request, new):
                if new:
                    await self.sink(ApprovalNeeded(request))
                return None
            case Refuse(text):
                return ToolResult(call_id=call.id, name=call.name, content=text, is_error=True)
            case Proceed():
                return _HELD if blocked else await self._run_one(call)

    async def stopped(self) -> None:
        """The run was cancelled: keep the partial text and answer the open calls."""
        await self._save_unsaved()
        if self._shown:
            await self._persist([AssistantMessage(text=self._shown, stopped=True)])
        missing = open_calls(self.session.messages)
        await self._persist(
            [
                ToolResult(call_id=c.id, name=c.name, content=STOPPED_RESULT, is_error=True)
                for c in missing
            ]
        )

    async def _run_one(self, call: ToolCall) -> ToolResult:
        await self.sink(ToolStarted(call.id, call.name, call.arguments))
        content, is_error = await self._execute(call)
        if len(content) > MAX_TOOL_OUTPUT:
            cut = len(content) - MAX_TOOL_OUTPUT
            content = f"{content[:MAX_TOOL_OUTPUT]}\n[output cut: {cut} more characters]"
        await self.sink(ToolFinished(call.id, call.name, is_error))
        return ToolResult(call_id=call.id, name=call.name, content=content, is_error=is_error)

    async def _execute(self, call: ToolCall) -> tuple[str, bool]:
        tool = self.engine._tools.get(call.name)
        if tool is None:
            known = ", ".join(self.engine._tools.names) or "none"
            return f"error: there is no tool named {call.name!r}. Available tools: {known}.", True
        try:
            args = tool.parse(call.arguments)
            return await tool.invoke(self.ctx, args), False
        except ToolError as exc:
            return f"error: {exc}", True
        except Exception as exc:  # a tool's bug is a result the model sees, not a crashed run
            log.warning("tool %s raised", call.name, exc_info=True)
            return f"error: {call.name} failed: {type(exc).__name__}: {exc}", True

    async def _failed(self, exc: ModelError, shown: str) -> State:
        if shown:  # keep what the thread already shows, without half-made calls
            await self._persist([AssistantMessage(text=shown)])
        return Fail(failure_text(exc, partial=bool(shown)))

    async def _compact_if_long(self) -> None:
        config = self.engine._config
        estimate = self._gauge.estimate(config.system_prompt, self.session.messages)
        if estimate > config.compact_at * config.context_window:
            log.info("%s holds about %d tokens: compacting", self.session.key, estimate)
            await self._compact()

    async def _compact(self) -> bool:
        """Replace older messages by a summary; False when that was not possible."""
        config = self.engine._config
        try:
            shorter = await compacted(self.engine._model, self.session.messages, config.keep_recent_turns)
        except CompactionFailed as exc:
            log.warning("compaction of %s failed: %s", self.session.key, exc)
            return False
        if shorter is None:
            return False
        await self.engine._store.replace_messages(self.session, shorter)
        self._gauge.reset()
        self._wire_ids = None
        return True

    async def _account(self, usage: Usage | None) -> None:
        if usage is None:
            return
        config = self.engine._config
        self.usage = self.usage + usage
        self.cost += charge(self.session, usage, config.cost(usage), self.engine._clock.now())

    async def _persist(self, messages: Sequence[Message]) -> None:
        if not messages:
            return
        self.session.updated_at = self.engine._clock.now()
        await self.engine._store.append_messages(self.session, messages)
