"""The agent loop: a typed state machine with a hard round limit.

    CallModel ──text only──▶ Finish
        │ tool calls
        ▼
    RunTools ──▶ CallModel (next round) … ──round limit──▶ WrapUp (one call, no tools) ──▶ Finish
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
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from bot.api.inbound import Author
from bot.engine.collect import ResponseCollector
from bot.engine.compact import CompactionFailed, TokenGauge, compacted
from bot.engine.events import (
    EngineEvent,
    EventSink,
    Failed,
    Finished,
    ModelCallStarted,
    Notice,
    SignInNeeded,
    TextDelta,
    Thinking,
)
from bot.engine.gate import Gate, OpenGate
from bot.engine.limits import charge, limit_reached
from bot.engine.messages import failure_text, waiting_text
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
from bot.engine.tool_round import ToolRounds
from bot.engine.window import output_budget, summary_input_chars, tools_tokens
from bot.errors import ContextOverflow, ModelError
from bot.infra import metrics
from bot.infra.clock import Clock
from bot.llm.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    Usage,
    UserMessage,
)
from bot.llm.model import (
    FinishPiece,
    Model,
    ModelRequest,
    NoticePiece,
    ReasoningPiece,
    TextPiece,
    ThinkingPiece,
    ToolCallPiece,
    ToolSpec,
    UsagePiece,
    WaitPiece,
)
from bot.llm.text_calls import with_text_calls
from bot.sessions.model import Session
from bot.sessions.store import SessionStore
from bot.tools.base import Tool, ToolContext
from bot.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

EMPTY_NOTE = (
    "Your last answer was empty. Answer the people in the thread now, in words, or call a tool."
)
EMPTY_WORDS = (
    "I couldn't come up with an answer this time: the model returned nothing, twice. "
    "Please try rephrasing, or ask again in a moment."
)
TURN_LIMIT_WORDS = (
    "I stopped after {turns} steps, the limit for one request, before I could finish. "
    "Send a message to let me go on."
)


@dataclass(frozen=True, slots=True)
class ThreadNotes:
    """What the model is told about a thread besides its transcript and todos, for one call."""

    where: SystemMessage | None = None
    """Where and when the run is: read just before the latest message people wrote, so the
    transcript before it stays one cacheable prefix across the rounds of a run."""
    after: Sequence[SystemMessage] = ()
    """Read after the transcript (the thread's memory)."""


Notes = Callable[[Session, bool], Awaitable[ThreadNotes]]
"""The thread's notes, before each model call; True for the run's first call (what others may
have changed since the last run is read again then)."""

NOTICE_WAIT_S = 2.0
"""A wait the model server asks for (``Retry-After``) this long or longer is told in the thread."""
Configure = Callable[[Session], EngineConfig]
"""The settings of one run in the session's thread (its channel's settings, its own model)."""


@dataclass(frozen=True, slots=True)
class Deps:
    """What a run works with: the same for every run of the engine."""

    model: Model
    tools: ToolRegistry
    store: SessionStore
    clock: Clock
    config: EngineConfig
    gate: Gate
    notes: Notes | None = None


class Engine:
    def __init__(
        self,
        model: Model,
        tools: ToolRegistry,
        store: SessionStore,
        clock: Clock,
        config: EngineConfig,
        gate: Gate | None = None,
        notes: Notes | None = None,
        configure: Configure | None = None,
    ) -> None:
        self._deps = Deps(model, tools, store, clock, config, gate or OpenGate(), notes)
        self._configure = configure

    async def run(
        self,
        session: Session,
        sink: EventSink,
        ctx: ToolContext,
        *,
        resume: bool = False,
        by_person: Callable[[], bool] = lambda: True,
    ) -> RunResult:
        """Answer the transcript's last message; everything it produces is persisted as it goes.

        With ``resume``, first run the calls left open by a paused run (their approvals decided).
        Cancelled, its open calls are answered as stopped — but for those waiting for a
        sign-in when ``by_person()`` says no person stopped it (the process stops): a restart
        finds them waiting.
        """
        deps = self._deps
        if self._configure is not None:
            deps = replace(deps, config=self._configure(session))
        run = _Run(deps, session, sink, ctx)
        ctx.events, ctx.spent = run.told, run.spent
        waiting = open_calls(session.messages) if resume else []
        state: State = RunTools(1, tuple(waiting)) if waiting else CallModel(1)
        try:
            return await self._drive(run, state)
        except asyncio.CancelledError:
            await run.stopped(() if by_person() else run.signing)
            raise

    async def _drive(self, run: _Run, state: State) -> RunResult:
        sink, max_turns = run.sink, run.deps.config.max_turns
        while True:
            match state:
                case CallModel(n) if n > max_turns:
                    state = WrapUp(n)
                case CallModel(n):
                    state = await run.call_model(n, with_tools=True)
                case RunTools(n, calls):
                    state = await run.run_tools(n, calls)
                case WrapUp(n):
                    state = await run.call_model(n, with_tools=False)
                case Finish():
                    await sink(Finished(run.usage))
                    return RunResult(True, run.rounds, run.usage)
                case Pause():
                    await sink(Finished(run.usage))
                    return RunResult(True, run.rounds, run.usage, paused=True)
                case Fail(message):
                    await sink(Failed(message))
                    return RunResult(False, run.rounds, run.usage, message)


class _Run(ToolRounds):
    """The working state of one run (its tool calls: :class:`ToolRounds`)."""

    def __init__(self, deps: Deps, session: Session, sink: EventSink, ctx: ToolContext) -> None:
        self.deps = deps
        self.session = session
        self.sink = sink
        self.ctx = ctx
        self.usage = Usage()
        self.rounds = 0
        self._note_for: object = None
        self._note: SystemMessage | None = None
        self._shown = ""
        """Text of the model call in progress (kept, marked stopped, if the run is stopped)."""
        self.cost = 0.0
        self._gauge = TokenGauge()
        self._overflow_retried = False
        self.signing: set[str] = set()
        """Calls that showed a sign-in link (see :meth:`told`)."""
        self._unsaved: list[Message] = []
        """An assistant message whose calls are all free (see :meth:`Gate.free`) and the results
        so far: stored together once the batch is done (one transaction per round trip)."""
        self._wire_ids: set[str] | None = None
        """Provider call ids used in the transcript (``None``: not gathered yet)."""
        self._nudged = False
        """The model gave an empty answer once in this run and was asked again."""
        self._cut: set[str] = set()
        """Calls of an answer the output limit cut off: their arguments may be incomplete."""
        self._unreadable: dict[str, str] = {}
        """Calls written as text that could not be read, and the error each is answered with."""
        self._notes = ThreadNotes()
        """What the model is told about the thread this call (:data:`Notes`)."""
        self._noted = False
        """The notes were read once in this run."""

    def _messages(self, wrap_up: bool) -> Sequence[Message]:
        todos, notes = self.session.todos, self._notes.after
        messages: Sequence[Message] = self.session.messages
        if self._notes.where is not None:
            messages = before_last_said(messages, self._notes.where)
        nudge = self._nudged and not wrap_up
        if not todos and not wrap_up and not nudge and not notes:
            return messages
        extra: list[Message] = []
        if todos:
            if self._note_for is not todos:
                self._note_for, self._note = todos, todo_note(todos)
            assert self._note is not None
            extra.append(self._note)
        extra.extend(notes)
        if wrap_up:
            extra.append(SystemMessage(text=TURN_LIMIT_NOTE))
        elif nudge:
            extra.append(SystemMessage(text=EMPTY_NOTE))
        return [*messages, *extra]

    async def call_model(self, round: int, *, with_tools: bool) -> State:
        self.rounds = round
        arrived, self.session.inbox = self.session.inbox, []
        if arrived:  # messages that arrived meanwhile: the model reads them now
            await self._persist(arrived)
        config = self.deps.config
        await self._read_notes()
        if reached := limit_reached(
            config, self.usage, self.cost, self.session, self.deps.clock.now()
        ):
            return Fail(reached)
        await self._compact_if_long()
        system, messages = self._system(), self._messages(wrap_up=not with_tools)
        tools = self._offered() if with_tools else ()
        request = ModelRequest(
            system=system,
            messages=messages,
            tools=tools,
            max_tokens=self._max_tokens(system, messages, tools),
            model=config.model,
            sampling=config.sampling,
        )
        await self.sink(ModelCallStarted(round, after_messages=bool(arrived)))
        got = ResponseCollector()
        try:
            await self._stream(request, got)
        except ContextOverflow as exc:
            await self._account(got.usage)
            if got.shown_text or self._overflow_retried:
                return await self._failed(exc, got.shown_text)
            self._overflow_retried = True  # compact and try once more
            log.info("context overflow in %s: compacting and retrying", self.session.key)
            return CallModel(round) if await self._compact() else await self._failed(exc, "")
        except ModelError as exc:
            log.warning("model call failed in %s: %s", self.session.key, exc)
            await self._account(got.usage)
            return await self._failed(exc, got.shown_text)
        self._shown = ""
        await self._account(got.usage)
        if got.usage is not None:
            self._gauge.observe(
                got.usage.prompt_tokens, got.usage.completion_tokens, len(request.messages)
            )
        message = got.message(self._used_wire_ids())
        if not with_tools and message.tool_calls:
            message = AssistantMessage(text=message.text)
        if not message.text.strip() and not message.tool_calls:  # blank counts as empty
            return await self._empty(round, wrap_up=not with_tools)
        self._answering()
        self._unreadable.update(got.problems)
        if got.finish_reason == "length" and message.tool_calls:  # the arguments may be cut off
            self._cut.update(c.id for c in message.tool_calls)
        if message.tool_calls and self._all_free(message.tool_calls):
            self._unsaved = [message]
        else:
            await self._persist([message])
        if message.tool_calls:
            return RunTools(round, message.tool_calls)
        return Finish()

    def _max_tokens(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec]
    ) -> int | None:
        """The configured cap, or less when the prompt leaves less room in the window."""
        config = self.deps.config
        if config.max_output_tokens is None:
            return None
        prompt = self._gauge.estimate(system, messages)
        if not self._gauge.known_messages:  # the server's count includes the tools
            prompt += tools_tokens(tools)
        return output_budget(config.max_output_tokens, config.context_window, prompt)

    async def _read_notes(self) -> None:
        if self.deps.notes is not None:
            self._notes, self._noted = await self.deps.notes(self.session, not self._noted), True

    def _offered(self) -> Sequence[ToolSpec]:
        specs = self.deps.tools.specs(self.session.key, self.session)
        config = self.deps.config
        if config.offer_tools is None and not config.hide_tools:
            return specs
        return tuple(s for s in specs if config.offers(s.name))

    def _tool(self, name: str) -> Tool | None:
        """The tool called ``name`` if this thread is offered it."""
        if not self.deps.config.offers(name):
            return None
        return self.deps.tools.get(name, self.session.key, self.session)

    def _system(self) -> str:
        """The system prompt, with what the thread's toolkits add (a loaded skill)."""
        extra = self.deps.tools.instructions(self.session)
        prompt = self.deps.config.system_prompt
        return f"{prompt}\n\n{extra}" if extra else prompt

    async def _empty(self, round: int, *, wrap_up: bool) -> State:
        """An answer with neither text (or only whitespace) nor calls: asked again once, then
        explained in words."""
        if not wrap_up and not self._nudged:
            self._nudged = True
            log.info("empty answer in %s: asking once more", self.session.key)
            return CallModel(round)
        words = (
            TURN_LIMIT_WORDS.format(turns=self.deps.config.max_turns) if wrap_up else EMPTY_WORDS
        )
        await self.sink(TextDelta(words))
        await self._persist([AssistantMessage(text=words)])
        return Finish()

    def _answering(self) -> None:
        """Calls made now answer the latest person's message: they are theirs to approve."""
        asked = next(
            (m for m in reversed(self.session.messages) if isinstance(m, UserMessage)), None
        )
        if asked is not None and asked.author_id:
            self.ctx.requester = Author(asked.author_id, asked.author_name or "someone")

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
        gate = self.deps.gate
        return all((t := self._tool(c.name)) is None or gate.free(self.ctx, t) for c in calls)

    async def _stream(self, request: ModelRequest, got: ResponseCollector) -> None:
        pieces = self.deps.model.stream(request)
        if self.deps.config.text_tool_calls:
            pieces = with_text_calls(pieces)
        reasoning = False
        async for piece in metrics.metered(pieces):
            reasoning = reasoning and isinstance(piece, ThinkingPiece | UsagePiece)
            match piece:
                case ThinkingPiece():
                    if not reasoning:  # said once as it begins, never its text
                        reasoning = True
                        await self.sink(Thinking())
                case TextPiece(text):
                    got.add_text(text)
                    self._shown = got.shown_text
                    await self.sink(TextDelta(text))
                case ToolCallPiece(index, provider_id, name, arguments, problem):
                    got.add_call_piece(index, provider_id, name, arguments, problem)
                case UsagePiece(usage):
                    got.usage = usage
                case FinishPiece(reason):
                    got.finish_reason = reason
                case NoticePiece(text):
                    await self.sink(Notice(text))
                case ReasoningPiece(item):
                    got.reasoning.append(item)
                case WaitPiece(seconds) if seconds >= NOTICE_WAIT_S:
                    zone, now = self.deps.config.timezone, self.deps.clock.now()
                    await self.sink(Notice(waiting_text(seconds, now, zone)))

    async def _failed(self, exc: ModelError, shown: str) -> State:
        if shown:  # keep what the thread already shows, without half-made calls
            await self._persist([AssistantMessage(text=shown)])
        return Fail(failure_text(exc, partial=bool(shown)))

    async def _compact_if_long(self) -> None:
        config = self.deps.config
        estimate = self._gauge.estimate(config.system_prompt, self.session.messages)
        if estimate > config.compact_at * config.context_window:
            log.info("%s holds about %d tokens: compacting", self.session.key, estimate)
            await self._compact()

    async def _compact(self) -> bool:
        """Replace older messages by a summary; False when that was not possible."""
        config = self.deps.config
        try:
            shorter = await compacted(
                self.deps.model,
                self.session.messages,
                config.keep_recent_turns,
                name=config.model,
                chars=summary_input_chars(config.context_window),
            )
        except CompactionFailed as exc:
            log.warning("compaction of %s failed: %s", self.session.key, exc)
            return False
        if shorter is None:
            return False
        await self.deps.store.replace_messages(self.session, shorter)
        self._gauge.reset()
        self._wire_ids = None
        return True

    async def _account(self, usage: Usage | None) -> None:
        if usage is not None:
            self.spent(usage, self.deps.config.cost(usage))

    async def told(self, event: EngineEvent) -> None:
        """What a tool tells the thread while it runs; a call about to wait for a person's
        sign-in is stored first (with its batch), so a restart finds it open and waiting."""
        if isinstance(event, SignInNeeded):
            await self._save_unsaved()
            self.signing.add(event.call_id)
        await self.sink(event)

    def spent(self, usage: Usage, cost: float) -> None:
        """Count tokens used for this run (by its model calls, or a sub-agent's) in its limits
        and in the thread's totals."""
        self.usage = self.usage + usage
        self.cost += charge(self.session, usage, cost, self.deps.clock.now())

    async def _persist(self, messages: Sequence[Message]) -> None:
        if not messages:
            return
        self.session.updated_at = self.deps.clock.now()
        await self.deps.store.append_messages(self.session, messages)


def before_last_said(messages: Sequence[Message], note: Message) -> Sequence[Message]:
    """``messages`` with ``note`` just before the latest message a person wrote (at the end when
    there is none)."""
    for at in range(len(messages) - 1, -1, -1):
        if isinstance(messages[at], UserMessage):
            return [*messages[:at], note, *messages[at:]]
    return [*messages, note]
