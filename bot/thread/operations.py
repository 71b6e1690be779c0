"""What people ask of a thread through commands (``/threadline status``, ``model``, ``skill``,
``quiet``, ``listen``, ``reset``) and what adapters ask about threads; :class:`bot.core.Core` hands these to
:class:`ThreadOperations`."""

from __future__ import annotations

import contextlib
import logging

from bot.api.inbound import Author, ThreadKey
from bot.api.surface import Surface
from bot.approvals import inline_waits as asking
from bot.approvals.decisions import Decisions
from bot.engine.compact import CHARS_PER_TOKEN, estimate_tokens
from bot.engine.window import in_use, tools_tokens
from bot.errors import Refused, SurfaceError
from bot.llm.model import Model
from bot.policy import keys
from bot.policy.who import Policy
from bot.sessions.model import RunState, Session
from bot.storage.protocol import Store
from bot.thread.hold import Holds
from bot.thread.runs import Supervisor
from bot.thread.settings import Channels
from bot.tools.base import ToolError
from bot.tools.registry import ToolRegistry
from bot.tools.skills import TOOLKIT as SKILLS
from bot.tools.skills import SkillsToolkit

log = logging.getLogger(__name__)

BUSY = "Another of my workers is busy in this thread; try again once it has answered."
NOT_IN = "I'm not in this thread: mention me here to start one."
QUIET = (
    "Quiet: in this thread I answer only messages that mention me; I still read the others"
    " when I'm mentioned. `/threadline listen` (or the Quiet or listen shortcut again) brings"
    " me back."
)
LISTENING = "Listening: I answer the messages of this thread again (as its channel says)."
COMMAND_WAIT_S = 120.0
"""A reset or a skill waits this long for a run on another worker to end."""


class ThreadOperations:
    def __init__(
        self,
        policy: Policy,
        store: Store,
        model: Model,
        tools: ToolRegistry,
        channels: Channels,
        supervisor: Supervisor,
        decisions: Decisions,
        holds: Holds,
    ) -> None:
        self.policy = policy
        self.store = store
        self.model = model
        self.tools = tools
        self.channels = channels
        self.supervisor = supervisor
        self.decisions = decisions
        self.holds = holds

    async def has_session(self, key: ThreadKey) -> bool:
        """Whether the bot has joined the thread (adapters answer un-mentioned messages only there)."""
        return await self.store.has_session(key)

    async def latest_thread(self, prefix: str) -> ThreadKey | None:
        """The thread under ``prefix`` (a channel: whole parts, ``slack:T1:C1`` is not under
        ``slack:T1:C``) whose session changed last."""
        return await self.store.latest_under(keys.as_prefix(prefix))

    async def describe(self, key: ThreadKey) -> str:
        """A short status of the thread for people: model, state, usage, todos."""
        session = await self.store.load_session(key, self.holds.clock.now())
        label = self._model_label(key, session.model)
        if not session.messages:
            return "\n".join(
                [
                    f"Model: {label}. No conversation in this thread yet.",
                    *self.tools.status(session),
                ]
            )
        usage = session.usage
        done = sum(t.status == "completed" for t in session.todos)
        state = "running" if self.supervisor.running(key) else session.state.value.replace("_", " ")
        lines = [
            f"Model: {label}",
            f"State: {state}",
            f"Messages: {len(session.messages)}",
            f"Tokens: {usage.prompt_tokens:,} in, {usage.completion_tokens:,} out",
            f"Context: {self._context(key, session)}",
        ]
        if session.cost_usd:
            lines.append(f"Cost: ${session.cost_usd:.4f}")
        lines.append(self._replies(key, session.quiet))
        if session.todos:
            lines.append(f"Todos: {done} of {len(session.todos)} done")
        lines.extend(self.tools.status(session))
        return "\n".join(lines)

    def _context(self, key: ThreadKey, session: Session) -> str:
        """How full the thread's context window is (the window of the model it uses): its
        prompt, tools and transcript, estimated."""
        config = self.channels.config(key, session.model)
        tools = [s for s in self.tools.specs(key, session) if config.offers(s.name)]
        prompt = len(config.system_prompt) // CHARS_PER_TOKEN + tools_tokens(tools)
        return in_use(prompt + estimate_tokens(session.messages), config.context_window)

    def _model_label(self, key: ThreadKey, chosen: str | None) -> str:
        model = self.channels.model(key, chosen)
        if model.source == "THREADLINE_MODEL" or model.name == self.model.name:
            return self.model.label
        return f"{model.name} ({model.source})"

    def _replies(self, key: ThreadKey, quiet: bool) -> str:
        """Which messages of the thread are answered, and why."""
        if quiet:
            return "Answers: only messages that mention me (this thread is quiet)"
        if self.channels.thread_replies(key) == "mentions":
            return "Answers: only messages that mention me (the channel's setting)"
        return "Answers: every message"

    def refusal(self, actor: Author, key: ThreadKey) -> str | None:
        """Why ``actor`` may not give a command about the thread ``key`` (None: they may)."""
        return self.policy.command(actor, key).reason

    async def choose_model(self, key: ThreadKey, name: str, actor: Author) -> str:
        """``/threadline model [NAME]``: show or change the model of this thread only (kept with
        its session; ``default`` goes back to the channel's); what to tell the person."""
        async with self.holds.session(key, wait_s=COMMAND_WAIT_S) as session:
            if session is None:
                return BUSY
            try:
                chosen, note = self.channels.choose(key, session.model, name)
            except Refused as exc:
                return f"Nothing changed: {exc}"
            if chosen != session.model:
                session.model = chosen
                session.updated_at = self.holds.clock.now()
                await self.holds.sessions.save_state(session)
                log.info("%s chose the model %s for %s", actor.id, chosen or "of the channel", key)
        return note

    async def quiet(self, key: ThreadKey, on: bool | None, actor: Author) -> str:
        """``/threadline quiet`` (``on``) or ``listen`` (None: whichever it is not): the
        thread's quiet flag, kept with its session (after the run going on there, if any, has
        ended); what to tell the person."""
        if not await self.store.has_session(key):
            return NOT_IN
        async with self.holds.session(key, wait_s=COMMAND_WAIT_S) as session:
            if session is None:
                return BUSY
            on = not session.quiet if on is None else on
            if session.quiet != on:
                session.quiet = on
                session.updated_at = self.holds.clock.now()
                await self.holds.sessions.save_state(session)
                log.info("%s made %s %s", actor.id, key, "quiet" if on else "listen")
        return QUIET if on else LISTENING

    async def load_skill(self, key: ThreadKey, name: str, actor: Author) -> str:
        """Load the skill ``name`` into the thread (``/threadline skill NAME``), once the run
        going on there, if any, has ended; what to tell the person."""
        skills = self.tools.toolkit(SKILLS)
        if not isinstance(skills, SkillsToolkit):
            return "No skills are set up for this bot."
        async with self.holds.session(key, wait_s=COMMAND_WAIT_S) as session:
            if session is None:
                return BUSY
            try:
                note = await skills.load(session, name, actor.display_name)
            except ToolError as exc:
                return f"Not loaded: {exc}."
            session.updated_at = self.holds.clock.now()
            await self.holds.sessions.save_state(session)
        return note

    async def reset(self, key: ThreadKey, surface: Surface) -> None:
        """Start a fresh session in the thread (after the running run, if any, ends)."""
        async with self.holds.session(key, wait_s=COMMAND_WAIT_S) as session:
            if session is None:
                await surface.post(BUSY)
                return
            if session.panel is not None and session.panel.pinned:
                with contextlib.suppress(SurfaceError):
                    await surface.unpin(session.panel.message_id)
            await self.decisions.expire_open(session, surface, reset=True)  # also of a paused run
            await asking.close(self.decisions, session, surface, asking.RESET)  # left by a crash
            session.todos, session.panel, session.inbox = (), None, []
            session.toolkits = {}
            session.state = RunState.IDLE
            session.updated_at = self.holds.clock.now()
            await self.holds.sessions.replace_messages(session, [])
            await self.store.close_feedback(key)  # a note about its answers is not kept now
            log.info("session %s reset", key)
