"""The composition root and the entry points adapters call: ``handle(inbound, surface)``,
``on_action(action_id, actor, surface)`` (buttons), ``decide``, ``stop``, ``reset``, ``describe``.

Runs of one thread happen one at a time under its lock. A paused run (waiting for approval) is
data: ``decide`` records the decision and resumes the run in a task the core owns, in this
process or after a restart. What a restart cut off is mended by :mod:`bot.recovery`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Coroutine
from typing import Any

from bot.approvals.models import Choice
from bot.approvals.service import EXPIRE_JOB, ApprovalService
from bot.clock import Clock, SystemClock
from bot.config import Settings
from bot.conversation import Author, Inbound, ThreadKey
from bot.engine.loop import Engine
from bot.engine.prompt import DEFAULT_SYSTEM_PROMPT, open_calls
from bot.engine.states import EngineConfig
from bot.errors import SurfaceError
from bot.llm.messages import UserMessage
from bot.llm.model import Model
from bot.llm.openai_model import build_openai_model
from bot.present.approval_card import parse_action, update_card
from bot.present.budget import BudgetRegistry
from bot.present.surface import Surface
from bot.recovery import Recovery
from bot.runner import Runner
from bot.scheduler.jobs import Job
from bot.scheduler.service import Scheduler
from bot.sessions.model import RunState, Session
from bot.storage.protocol import Store
from bot.storage.sqlite import SqliteStore
from bot.threads import ThreadLocks
from bot.tools.builtin import builtin_tools
from bot.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

DELIVERY_RETENTION_S = 48 * 3600
PURGE_JOB = "purge_deliveries"
WAITING = "I'll read this once the approval above is decided."
SurfaceFactory = Callable[[ThreadKey], Surface]
ChannelOf = Callable[[ThreadKey], str]
"""The channel a thread belongs to, as its adapter names it."""


class Core:
    def __init__(
        self, settings: Settings, store: Store, model: Model, tools: ToolRegistry, clock: Clock
    ) -> None:
        self.settings = settings
        self.store = store
        self.model = model
        self.tools = tools
        self.clock = clock
        self.scheduler = Scheduler(store, clock)
        self.approvals = ApprovalService(settings, store, clock, self.scheduler, self.channel_of)
        self.engine = Engine(
            model,
            tools,
            store,
            clock,
            EngineConfig(
                system_prompt=settings.system_prompt or DEFAULT_SYSTEM_PROMPT,
                max_turns=settings.max_turns,
                max_output_tokens=settings.max_output_tokens,
                price_input_per_mtok=settings.price_input_per_mtok,
                price_output_per_mtok=settings.price_output_per_mtok,
                context_window=settings.context_window,
                compact_at=settings.compact_at,
                keep_recent_turns=settings.keep_recent_turns,
                run_max_tokens=settings.run_max_tokens,
                run_max_cost_usd=settings.run_max_cost_usd,
                day_max_tokens=settings.day_max_tokens,
                day_max_cost_usd=settings.day_max_cost_usd,
            ),
            gate=self.approvals,
        )
        self.budgets = BudgetRegistry(clock)
        self.runner = Runner(self.engine, store, clock, self.budgets)
        self._locks = ThreadLocks()
        self.recovery = Recovery(store, self.approvals, self.runner, clock, self._locks)
        self._surfaces: dict[str, SurfaceFactory] = {}
        self._channels: dict[str, ChannelOf] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.scheduler.handle(PURGE_JOB, self._purge_job)
        self.scheduler.handle(EXPIRE_JOB, self._expire_job)

    @classmethod
    def create(
        cls,
        settings: Settings,
        *,
        clock: Clock | None = None,
        model: Model | None = None,
        store: Store | None = None,
    ) -> Core:
        """Build everything once; call :meth:`start` before use."""
        clock = clock or SystemClock()
        return cls(
            settings,
            store or SqliteStore(settings.database_path),
            model or build_openai_model(settings, clock, rng=random.Random()),
            ToolRegistry(builtin_tools(settings)),
            clock,
        )

    @property
    def model_label(self) -> str:
        return self.model.label

    # --- lifecycle ---

    async def start(self) -> None:
        await self.store.open()
        purged = await self.store.purge_deliveries(self.clock.now() - DELIVERY_RETENTION_S)
        await self.scheduler.schedule(Job(PURGE_JOB, PURGE_JOB, self.clock.now() + 3600, interval_s=3600))
        log.info("core ready (model: %s; %d old delivery ids purged)", self.model_label, purged)

    async def recover(self) -> int:
        """After a crash: every thread whose run was cut off gets its open tool calls repaired,
        then its run picked up again (once: a run cut off again gets a word in the thread
        instead); messages that were waiting for the run are answered now. Call once the
        adapters are up (their surfaces registered). Returns how many threads it touched."""
        keys = await self.recovery.cut_off()
        for key in keys:
            surface = self.surface_for(key)
            if surface is not None:
                self._spawn(self.recovery.recover(key, surface))
        if keys:
            log.warning("%d threads were cut off mid-run by a restart", len(keys))
        return len(keys)

    async def wait_idle(self) -> None:
        """Return once no resumed run or other background work of the core is going on."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.model.aclose()
        await self.store.close()

    def register_surfaces(
        self, prefix: str, factory: SurfaceFactory, channel_of: ChannelOf | None = None
    ) -> None:
        """How to reach threads whose key starts with ``prefix`` without an incoming event
        (an approval that expires, a resumed run), and, if the adapter knows it, the channel
        of such a thread (where "Always allow here" applies)."""
        self._surfaces[prefix] = factory
        if channel_of is not None:
            self._channels[prefix] = channel_of

    def channel_of(self, key: str) -> str:
        """The thread's channel as its adapter names it; the thread itself when unknown."""
        prefix = max((p for p in self._channels if key.startswith(p)), key=len, default=None)
        return self._channels[prefix](ThreadKey(key)) if prefix is not None else key

    def surface_for(self, key: ThreadKey) -> Surface | None:
        prefix = max((p for p in self._surfaces if key.startswith(p)), key=len, default=None)
        return self._surfaces[prefix](key) if prefix is not None else None

    # --- messages ---

    async def handle(self, inbound: Inbound, surface: Surface) -> None:
        """Answer one message: once per event id, one run per thread at a time, in order.

        A message arriving during a run is shown to that run's next model call (``steer``) or
        waits for its own run (``queue``). Returns when the work it started has landed.
        """
        if not await self.store.first_delivery(inbound.event_id, self.clock.now()):
            log.info("ignoring a redelivery of %s", inbound.event_id)
            return
        text, cut = _cap(inbound.text, self.settings.max_input_chars)
        author = inbound.author
        message = UserMessage(text=text, author_id=author.id, author_name=author.display_name)
        notice = _cut_notice(len(inbound.text), len(text)) if cut else None
        steer = self.settings.during_run == "steer" and notice is None
        if steer and await self.runner.steer(inbound.thread_key, message):
            return
        async with self._locks.hold(inbound.thread_key):
            session = await self.store.load_session(inbound.thread_key, self.clock.now())
            await self.recovery.repair(session, surface)
            session.inbox.append(message)
            if session.state is RunState.AWAITING_APPROVAL:
                await self.store.save_state(session)
                if await self._still_waiting(session, surface):
                    await self.runner.say(session, surface, WAITING)
                    return
                await self.runner.drive(session, author, surface, resume=True, notice=notice)
                return
            arrived, session.inbox = session.inbox, []
            await self.store.append_messages(session, arrived)
            await self.runner.drive(session, author, surface, notice=notice)

    async def stop(self, key: ThreadKey, actor: Author) -> bool:
        """Stop the thread's run; False when nothing runs."""
        return self.runner.stop(key, actor)

    # --- buttons and decisions ---

    async def on_action(
        self, action_id: str, actor: Author, surface: Surface, message_id: str | None = None
    ) -> str | None:
        """A button click (on the message ``message_id``, when the platform says which);
        returns a private note for the clicker."""
        parsed = parse_action(action_id)
        if parsed is not None:
            choice, approval_id = parsed
            return await self.decide(approval_id, actor, choice, surface, card_id=message_id)
        kind, _, run_id = action_id.partition(":")
        if kind == "stop":
            if self.runner.stop(surface.thread_key, actor, run_id):
                return None
            return "That run has already ended."
        log.info("click on unknown action %r by %s", action_id, actor.id)
        return "This button is no longer active."

    async def decide(
        self,
        approval_id: str,
        actor: Author,
        choice: Choice,
        surface: Surface | None = None,
        *,
        card_id: str | None = None,
    ) -> str:
        """Record a decision (once, if ``actor`` may make it), show it on the card, and resume
        the run in the background. Returns what the clicker is told.

        ``card_id`` is the clicked message: the card, when its id was not recorded (a crash
        between posting the card and storing its id)."""
        outcome = await self.approvals.decide(approval_id, actor, choice)
        request = outcome.request
        if outcome.changed and request is not None:
            if request.card_id is None and card_id is not None:
                request.card_id = card_id
                await self.store.set_approval_card(request.id, card_id)
            key = ThreadKey(request.key)
            surface = surface if surface is not None and surface.thread_key == key else self.surface_for(key)
            if surface is not None:
                await update_card(surface, self.clock, request)
                self._spawn(self._resume(key, surface))
        return outcome.note

    async def _resume(self, key: ThreadKey, surface: Surface) -> None:
        async with self._locks.hold(key):
            session = await self.store.load_session(key, self.clock.now())
            if session.state is not RunState.AWAITING_APPROVAL:
                return
            if await self._still_waiting(session, surface):
                return
            waiting = open_calls(session.messages)
            found = await self.store.approvals_for(key, [c.id for c in waiting])
            first = next(iter(found.values()), None)
            author = Author(first.requester_id, first.requester_name) if first else Author("", "someone")
            await self.runner.drive(session, author, surface, resume=True)

    async def _still_waiting(self, session: Session, surface: Surface | None) -> bool:
        """Whether a call of the paused run still waits for a decision (expiring overdue ones)."""
        calls = open_calls(session.messages)
        found = await self.store.approvals_for(session.key, [c.id for c in calls])
        waiting = False
        for request in found.values():
            if not request.pending:
                continue
            if request.expires_at > self.clock.now():
                waiting = True
            elif (expired := await self.approvals.expire(request.id)) is not None and surface:
                await update_card(surface, self.clock, expired)
        return waiting

    # --- jobs ---

    async def _purge_job(self, job: Job) -> None:
        purged = await self.store.purge_deliveries(self.clock.now() - DELIVERY_RETENTION_S)
        log.info("purged %d old delivery ids", purged)

    async def _expire_job(self, job: Job) -> None:
        request = await self.approvals.expire(str(job.payload["approval_id"]))
        if request is None:
            return
        key = ThreadKey(request.key)
        surface = self.surface_for(key)
        if surface is None:
            log.info("approval %s expired; its thread %s is not reachable now", request.id, key)
            return
        await update_card(surface, self.clock, request)
        self._spawn(self._resume(key, surface))

    # --- thread commands ---

    async def has_session(self, key: ThreadKey) -> bool:
        """Whether the bot has joined the thread (adapters answer un-mentioned messages only there)."""
        return await self.store.has_session(key)

    async def describe(self, key: ThreadKey) -> str:
        """A short status of the thread for people: model, state, usage, todos."""
        session = await self.store.load_session(key, self.clock.now())
        if not session.messages:
            return f"Model: {self.model_label}. No conversation in this thread yet."
        usage = session.usage
        done = sum(t.status == "completed" for t in session.todos)
        state = "running" if self.runner.running(key) else session.state.value.replace("_", " ")
        lines = [
            f"Model: {self.model_label}",
            f"State: {state}",
            f"Messages: {len(session.messages)}",
            f"Tokens: {usage.prompt_tokens:,} in, {usage.completion_tokens:,} out",
        ]
        if session.cost_usd:
            lines.append(f"Cost: ${session.cost_usd:.4f}")
        if session.todos:
            lines.append(f"Todos: {done} of {len(session.todos)} done")
        return "\n".join(lines)

    async def reset(self, key: ThreadKey, surface: Surface) -> None:
        """Start a fresh session in the thread (after the running run, if any, ends)."""
        async with self._locks.hold(key):
            session = await self.store.load_session(key, self.clock.now())
            if session.panel is not None and session.panel.pinned:
                with contextlib.suppress(SurfaceError):
                    await surface.unpin(session.panel.message_id)
            await self.recovery.expire_approvals(session, surface)  # also of a run waiting for one
            session.todos, session.panel, session.inbox = (), None, []
            session.state = RunState.IDLE
            session.updated_at = self.clock.now()
            await self.store.replace_messages(session, [])
            log.info("session %s reset", key)

    # --- plumbing ---

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background work failed", exc_info=task.exception())


def _cap(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit], True


def _cut_notice(original: int, kept: int) -> str:
    return f"Your message was {original:,} characters long; I read only the first {kept:,}."

