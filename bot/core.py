"""The composition root and the façade adapters call (:class:`bot.api.port.CoreApi`):
``handle(inbound, surface)``, ``on_action(action_id, actor, surface)`` (buttons), ``stop``,
``reset``, ``describe``.

Runs of one thread happen one at a time under its lock, in arrival order
(:class:`~bot.thread.runs.Supervisor`). A paused run (waiting for approval) is data; what a
click or an expiry does with it is :mod:`bot.approvals.decisions`. What a restart cut off is mended by
:mod:`bot.thread.recovery`. How an accepted message is answered is :mod:`bot.thread.answer`.
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Awaitable, Mapping
from typing import Any

from bot.api import actions
from bot.api.commands import CANNOT, RESET_DONE, STOPPED
from bot.api.home import Ability, Home
from bot.api.inbound import Author, Inbound, ThreadKey
from bot.api.port import Stopped
from bot.api.shortcuts import Note, Shortcut
from bot.api.surface import Button, Surface
from bot.approvals.decided import Decided
from bot.approvals.decisions import Decisions
from bot.approvals.inline import InlineGate
from bot.approvals.notices import Notices
from bot.approvals.service import ApprovalService
from bot.cluster.leases import LeasedSessions, Leasing, OneProcess, ThreadLeases
from bot.cluster.shared_rate import SharedRates
from bot.cluster.workers import Alone, Workers, WorkStore, worker_id
from bot.config import Settings
from bot.delegate.tool import Delegations
from bot.engine.loop import Engine
from bot.engine.states import EngineConfig
from bot.errors import SurfaceError
from bot.feedback.service import Feedbacks
from bot.files.intake import Intake, sees_images
from bot.files.pending import PendingFiles
from bot.infra.clock import Clock, SystemClock
from bot.infra.tasks import TaskSet
from bot.llm.first_token import FirstTokenLimit
from bot.llm.messages import UserMessage
from bot.llm.model import Model
from bot.llm.openai_model import build_openai_model
from bot.mcp.forms import Asking, FormDesk, FormReply, ended
from bot.mcp.peers import Heard, Peers
from bot.mcp.pending import PendingForm
from bot.mcp.sampling import Sampler
from bot.mcp.sign_in_links import SignInLinks
from bot.mcp.sign_ins import sealer_of
from bot.memory.service import Memories
from bot.policy.who import Policy
from bot.present.budget import BudgetRegistry
from bot.scheduler.prompts import PromptSchedules, left_over_notice
from bot.scheduler.service import Scheduler
from bot.sessions.model import RunState
from bot.sessions.store import SessionStore
from bot.storage.budgets import BudgetStore
from bot.storage.choose import store_for
from bot.storage.protocol import Store
from bot.thread.answer import Answers
from bot.thread.deliveries import Deliveries
from bot.thread.edits import Edits, in_window
from bot.thread.history import earlier_note
from bot.thread.hold import Holds
from bot.thread.line import ThreadLocks
from bot.thread.notes import ThreadNoter
from bot.thread.operations import ThreadOperations
from bot.thread.overview import Overview
from bot.thread.reach import ChannelOf, DirectOf, NameOf, SurfaceFactory, Surfaces
from bot.thread.recovery import Recovery
from bot.thread.runs import Supervisor
from bot.thread.settings import Channels
from bot.tools.builtin import channel as channel_tools
from bot.tools.builtin import files_out as files_tools
from bot.tools.builtin import memory as memory_tools
from bot.tools.builtin import schedule as schedule_tools
from bot.tools.builtin import tool_registry
from bot.tools.builtin.channel import ChannelToolkit
from bot.tools.builtin.files_out import FilesToolkit
from bot.tools.builtin.memory import MemoryToolkit
from bot.tools.builtin.schedule import ScheduleToolkit
from bot.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

STOP_REFUSED = "You can't use Threadline here, so you can't stop its run; it goes on."
NOT_OURS = (
    "That message is not in a Threadline thread (this bot is not in that thread), so there is"
    " nothing to do there."
)
RESET_CONFIRM = (
    "Reset this thread? Threadline forgets its conversation here and the next message starts"
    " afresh. Nothing changes until you confirm."
)


class Core:
    def __init__(
        self, settings: Settings, store: Store, model: Model, tools: ToolRegistry, clock: Clock
    ) -> None:
        self.settings = settings
        self.store = store
        self.model = model
        self.tools = tools
        self.clock = clock
        self.tasks = TaskSet("the core")
        self.surfaces = Surfaces()
        self.intake = Intake(settings, settings.data_dir / "workspaces")
        """Keeps the files people share and tools return in the threads' workspaces."""
        self.policy = Policy(settings, direct=self.surfaces.direct)
        """Who may do what: every entry point asks it."""
        self.scheduler = Scheduler(store, clock)
        self.deliveries = Deliveries(store, clock, self.scheduler)
        self.approvals = ApprovalService(
            settings,
            store,
            clock,
            self.scheduler,
            self.policy,
            self.surfaces.channel_of,
            self.surfaces.names,
        )
        self.notices = Notices(
            store, self.policy, self.surfaces, self.scheduler, clock, settings.approval_notify_max
        )
        """Approvers told by a direct message; escalations (:mod:`bot.approvals.notices`)."""
        self.schedules = PromptSchedules(
            settings,
            store,
            self.scheduler,
            clock,
            self.surfaces,
            self._scheduled_answer,
            self.policy,
        )
        self.memory = Memories(settings, store, clock, self.surfaces.channel_of)
        tools.attach(
            FilesToolkit(settings, settings.data_dir / "workspaces", self.surfaces),
            own=files_tools.NAMES,
        )
        tools.attach(ScheduleToolkit(self.schedules), own=schedule_tools.NAMES)
        tools.attach(MemoryToolkit(self.memory), own=memory_tools.NAMES)
        tools.attach(
            ChannelToolkit(
                self.surfaces,
                settings.read_channel_messages,
                settings.read_channel_chars,
                self.policy,
            ),
            own=channel_tools.NAMES,
        )
        config = EngineConfig.from_settings(settings)
        self.channels = Channels(settings, config)
        self.leases: Leasing = OneProcess()
        self.sessions: SessionStore = store
        """The sessions as this worker may write them (with several workers: under a lease)."""
        shared: SharedRates | None = None
        if isinstance(store, WorkStore):  # several workers may share it
            owner = settings.worker_id or worker_id()
            leases = ThreadLeases(store, owner, settings.lease_ttl_s, on_lost=self._lost)
            self.leases, self.sessions = leases, LeasedSessions(store, leases)
            if isinstance(store, BudgetStore):
                shared = SharedRates(store, owner, clock)
        self._hearers: list[Heard] = []
        self.peers: Peers | None = None
        """With several workers: how an answer to a form or a sign-in's callback that reaches
        this worker finds the one whose call waits for it (:mod:`bot.mcp.peers`)."""
        if isinstance(store, WorkStore) and isinstance(self.leases, ThreadLeases):
            self.peers = Peers(
                owner=self.leases.owner,
                alive=store.is_present,
                nudge=self._nudge,
                listen=self._hearers.append,
                poll_s=settings.worker_poll_s,
            )
        self.forms = FormDesk(clock, self.surfaces.surface_for, store, self.peers)
        """Forms MCP servers ask the runs' people to fill in (:mod:`bot.mcp.forms`), answered
        on any worker."""
        self.sign_in_links = SignInLinks(store, sealer_of(settings), clock)
        """What a "Sign in…" click shows: the link, to the wait's person alone (on any
        worker: it is sealed in the wait's row)."""
        self.holds = Holds(ThreadLocks(), self.leases, self.sessions, clock)
        """Every piece of work on a thread holds it this way: line, lease, session."""
        self.engine = Engine(
            model,
            tools,
            self.sessions,
            clock,
            config,
            gate=self.approvals,
            notes=ThreadNoter(
                settings, clock, self.channels, self.surfaces, self.schedules, self.memory
            ),
            configure=lambda session: self.channels.config(session.key, session.model),
        )
        self.supervisor = Supervisor(
            self.engine,
            self.sessions,
            store,
            clock,
            BudgetRegistry(clock, shared=shared),
            file_after=settings.answer_file_after,
        )
        self.feedback = Feedbacks(store, clock, enabled=settings.feedback)
        """👍 / 👎 on final answers (:mod:`bot.feedback`)."""
        self.supervisor.answered = self.feedback.offer
        decided = Decided()
        self.work: Alone | Workers = Alone()
        if isinstance(store, WorkStore) and isinstance(self.leases, ThreadLeases):
            self.work = Workers(
                store,
                self.leases.owner,
                self.supervisor,
                poll_s=settings.worker_poll_s,
                busy=self.holds.locks.busy,
                place=self._pick_up,
                recover=self._take_over,
                wake=decided.wake_all,
                heard=self._heard,
                recheck=self.leases.check_now,
            )
        self.decisions = Decisions(
            self.approvals,
            store,
            self.supervisor,
            self.holds,
            self.scheduler,
            self.surfaces,
            self.tasks.spawn,
            decided,
            nudge=self.work.nudge if isinstance(self.work, Workers) else None,
            sign_ins=store,
        )
        self.delegations = Delegations(
            settings,
            model,
            tools,
            clock,
            lambda session: self.channels.config(session.key, session.model),
            lambda parent, sink, say: InlineGate(self.approvals, self.decisions, parent, sink, say),
        )
        tools.add(self.delegations.tool())
        self.asking = Asking(
            self.forms,
            settings.data_dir / "workspaces" if settings.workspace_tools else None,
            sample=Sampler(
                model,
                lambda session: self.channels.config(session.key, session.model),
                lambda parent, sink: InlineGate(self.approvals, self.decisions, parent, sink),
                self._sampling_cap,
                self._sees_images,
                settings.image_max_bytes,
            ),
            surface_for=self.surfaces.surface_for,
            sees_images=self._sees_images,
            image_max_bytes=settings.image_max_bytes,
            intake=self.intake,
        )
        """How a thread's call answers what its MCP server asks (forms, roots, sampling)."""
        self.recovery = Recovery(self.holds, self.decisions, self.supervisor)
        self.answers = Answers(
            self.tasks,
            self.surfaces,
            self.channels,
            self.supervisor,
            self.decisions,
            self.recovery,
            self.holds,
            self.work,
            PendingFiles(self.intake, self.deliveries, self._sees_images),
            Edits(self.supervisor, self.holds, self.channels, self.decisions, self.deliveries),
        )
        """How an accepted message is answered in its thread."""
        self.operations = ThreadOperations(
            self.policy,
            store,
            model,
            tools,
            self.channels,
            self.supervisor,
            self.decisions,
            self.holds,
        )
        """What commands and adapters ask of a thread."""
        self.overview = Overview(tools, store, self.policy, clock)
        """What a person is shown outside any thread (Slack's App Home)."""
        self.decide = self.decisions.decide
        """``decide(approval_id, actor, choice, surface=None, *, card_id=None)``: a decision
        on an approval request, as a click makes it (see :class:`Decisions`)."""

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
            store or store_for(settings),
            model or _configured_model(settings, clock),
            tool_registry(settings, clock),
            clock,
        )

    @property
    def model_label(self) -> str:
        return self.model.label

    # --- lifecycle ---

    async def start(self) -> None:
        await self.store.open()
        await self.work.start()
        await self.forms.start()
        purged = await self.deliveries.start()
        log.info("core ready (model: %s; %d old delivery ids purged)", self.model_label, purged)

    async def recover(self) -> int:
        """After a crash: every thread whose run was cut off gets its open tool calls repaired,
        then its run picked up again (once: a run cut off again gets a word in the thread
        instead); messages that were waiting for the run are answered now. Call once the
        adapters are up (their surfaces registered). Returns how many threads it touched."""
        keys = await self.recovery.cut_off()
        for key in keys:
            surface = self.surfaces.surface_for(key)
            if surface is not None:
                self.tasks.spawn(self.recovery.recover(key, surface, self.holds.locks.reserve(key)))
        if keys:
            log.warning("%d threads were cut off mid-run by a restart", len(keys))
        for key in await self.store.keys_in_state(RunState.AWAITING_APPROVAL):
            surface = self.surfaces.surface_for(key)
            if surface is not None:  # decided before the restart, never resumed: it goes on now
                self.tasks.spawn(self.recovery.paused(key, surface))
        arrived = await self.deliveries.left_over()
        for key, message in arrived:  # accepted before the restart, not in their session yet
            surface = self.surfaces.surface_for(key)
            if surface is not None:
                author = Author(message.author_id or "", message.author_name or "someone")
                await self.answers.place(
                    key, message, author, surface, left_over_notice(message), awaited=False
                )
        if arrived:
            log.warning("%d messages accepted before a restart are answered now", len(arrived))
        return len(keys) + len(arrived)

    async def signed_in(self, key: str) -> None:
        """A person's sign-in that a paused run waited for came back (after a restart): the
        run goes on in the background, holding its thread."""
        thread = ThreadKey(key)
        surface = self.surfaces.surface_for(thread)
        if surface is None:
            log.info("a sign-in came back for %s, which is not reachable now", key)
            return
        self.tasks.spawn(self.decisions.resume(thread, surface))

    async def sign_in_take_over(self, key: str) -> None:
        """A sign-in came back for a thread whose worker died mid-run: the run is mended as
        after a restart (found paused on the sign-in) before the callback resumes it."""
        thread = ThreadKey(key)
        surface = self.surfaces.surface_for(thread)
        if surface is not None:
            await self.recovery.recover(thread, surface)

    async def wait_idle(self) -> None:
        """Return once no resumed run or other background work of the core is going on."""
        await self.tasks.idle()

    async def aclose(self) -> None:
        await self.work.aclose()
        await self.tasks.drain()
        await self.supervisor.budgets.aclose()
        await self.model.aclose()
        await self.store.close()

    def register_surfaces(
        self,
        prefix: str,
        factory: SurfaceFactory,
        channel_of: ChannelOf | None = None,
        direct: DirectOf | None = None,
        name_of: NameOf | None = None,
    ) -> None:
        """How to reach threads whose key begins with the parts of ``prefix`` without an event
        (an approval that expires, a resumed run), and, if the adapter knows them, the channel
        of such a thread (where "Always allow here" applies), whether it is a direct message
        (``[access] dms`` applies) and the channel's name (the model is told it)."""
        self.surfaces.register(prefix, factory, channel_of, direct, name_of)

    def surface_for(self, key: ThreadKey) -> Surface | None:
        return self.surfaces.surface_for(key)

    # --- messages ---

    async def handle(self, inbound: Inbound, surface: Surface) -> None:
        """Answer one message: once per event id, one run per thread at a time, in order.

        A message arriving during a run is shown to that run's next model call (``steer``) or
        waits for its own run (``queue``). Returns when the work it started has landed.
        """
        work = await self.admit(inbound, surface)
        if work is not None:
            await work

    async def admit(self, inbound: Inbound, surface: Surface) -> Awaitable[None] | None:
        """Take the message's place in its thread: once this returns, a later message of the
        thread comes after it. Returns the work that answers it, already started (await it to
        know when it landed), or None (a redelivery, a message handed to the thread's running
        run, a message not addressed to the bot in a thread it is not in, or the core shutting
        down). Whether a message that does not mention the bot is answered or only kept is the
        thread's (:meth:`bot.thread.settings.Channels.answers`). An edit (``inbound.edit``)
        starts the answer to the message it changes again, if it counts
        (:mod:`bot.thread.edits`)."""
        if inbound.edit and not self._may_edit(inbound):
            return None
        if not inbound.addressed and not await self.store.has_session(inbound.thread_key):
            return None  # a thread the bot is not in
        verdict = self.policy.talk(inbound.author, inbound.thread_key)
        if not verdict.allowed:
            log.info(
                "not answering %s from %s: %s", inbound.event_id, inbound.author.id, verdict.reason
            )
            return None
        text, cut = _cap(inbound.text, self.settings.max_input_chars)
        author = inbound.author
        earlier = await self._earlier(inbound)
        message = UserMessage(
            text=text,
            author_id=author.id,
            author_name=author.display_name,
            event_id=inbound.event_id,
            earlier=earlier,
            addressed=inbound.addressed,
            message_id=inbound.message_id,
            edit=inbound.edit,
        )
        # stored with the files it names before any is downloaded (bot.files.pending)
        if not await self.deliveries.accept(inbound.thread_key, message, inbound.files):
            log.info("ignoring a redelivery of %s", inbound.event_id)
            return None
        notice = _cut_notice(len(inbound.text), len(text)) if cut else None
        return await self.answers.place(
            inbound.thread_key,
            message,
            author,
            surface,
            notice,
            awaited=True,
            files=bool(inbound.files),
        )

    def _may_edit(self, inbound: Inbound) -> bool:
        """An edit that may count: it names its message, comes soon enough after its post, has
        words and brings no files (an edit Discord sends without its content, the Message
        Content intent off, has none); the rest is asked in its place (:meth:`Edits.apply`)."""
        posted = inbound.posted_at
        if inbound.message_id is None or posted is None or inbound.files:
            return False
        if not inbound.text.strip():
            return False
        if not in_window(posted, self.clock.now()):
            log.info("an edit in %s comes too late to change anything", inbound.thread_key)
            return False
        return True

    def _sampling_cap(self, server: str) -> int:
        found = self.settings.mcp_servers.get(server)
        return found.sampling_max_tokens if found is not None else 0

    def _sees_images(self, key: ThreadKey) -> bool:
        model = self.channels.model(key, None)
        return sees_images(self.settings.vision, model.name, demo=self.settings.uses_demo_model)

    async def _earlier(self, inbound: Inbound) -> str | None:
        """The thread's earlier messages, for a first mention in a thread that existed before
        (once: a thread with a session has its transcript)."""
        if not inbound.history or await self.store.has_session(inbound.thread_key):
            return None
        return earlier_note(inbound.history, self.settings.thread_history_chars)

    async def stop(self, key: ThreadKey, actor: Author, run_id: str | None = None) -> Stopped:
        """Stop the thread's run (only run ``run_id``, if given), here or on the worker that
        holds it, if ``actor`` may (:meth:`Policy.stop`, the same for the button and the
        command)."""
        verdict = self.policy.stop(actor, key)
        if not verdict.allowed:
            log.info("%s may not stop the run in %s: %s", actor.id, key, verdict.reason)
            return "refused"
        if self.supervisor.stop(key, actor, run_id):
            return "stopping"
        if await self.work.stop_elsewhere(key, run_id, actor):
            return "stopping"
        return "nothing"

    # --- buttons ---

    async def on_action(
        self, action_id: str, actor: Author, surface: Surface, message_id: str | None = None
    ) -> str | None:
        """A button click (on the message ``message_id``, when the platform says which);
        returns a private note for the clicker."""
        match actions.parse(action_id):
            case actions.Decide(choice, approval_id):
                return await self.decide(approval_id, actor, choice, surface, card_id=message_id)
            case actions.StopRun(run_id):
                stopped = await self.stop(surface.thread_key, actor, run_id)
                if stopped == "refused":
                    return STOP_REFUSED
                if stopped == "stopping":
                    return None
                if message_id is not None:  # a button its run left behind: it goes now
                    with contextlib.suppress(SurfaceError):
                        await surface.drop_buttons(message_id)
                return "That run has already ended."
            case actions.ResetThread(key):
                return await self._confirmed_reset(ThreadKey(key), actor, surface)
            case actions.Rate(run_id, good):
                await self.feedback.rate(run_id, good, actor, surface.thread_key)
                return None
            case actions.Explain():
                return "This button is no longer active."
            case actions.AnswerForm(step, form_id):
                return await self._form_step(step, form_id, actor, surface, message_id)
            case actions.SignIn(wait_id):
                return await self.sign_in_links.note(wait_id, actor)
            case None:
                log.info("click on unknown action %r by %s", action_id, actor.id)
                return "This button is no longer active."

    async def _confirmed_reset(self, key: ThreadKey, actor: Author, surface: Surface) -> str:
        """The reset a shortcut asked to confirm, once confirmed (the right to give a command
        there is asked again: it may have changed)."""
        if self.operations.refusal(actor, key) is not None:
            return CANNOT
        target = surface if surface.thread_key == key else self.surfaces.surface_for(key)
        if target is None:
            return "I can't reach that thread any more; nothing changed."
        await self.reset(key, target)
        log.info("%s reset %s", actor.id, key)
        return RESET_DONE

    # --- shortcuts on a message (bot.api.shortcuts) ---

    async def on_shortcut(
        self, shortcut: Shortcut, key: ThreadKey, actor: Author, surface: Surface
    ) -> Note:
        """A shortcut on a message of the thread ``key``: the same rights as the commands (the
        Stop right for stop, the command right for the others); a private note back."""
        if not await self.store.has_session(key):
            return Note(NOT_OURS)
        if shortcut == "stop":
            stopped = await self.stop(key, actor)
            return Note(STOP_REFUSED if stopped == "refused" else STOPPED[stopped])
        if self.operations.refusal(actor, key) is not None:
            return Note(CANNOT)
        if shortcut == "status":
            return Note(await self.describe(key))
        if shortcut == "quiet":
            return Note(await self.quiet(key, None, actor))
        confirm = Button(actions.encode(actions.ResetThread(key)), "Reset this thread", "danger")
        return Note(RESET_CONFIRM, (confirm,))

    async def _form_step(
        self,
        step: actions.FormStep,
        form_id: str,
        actor: Author,
        surface: Surface,
        message_id: str | None,
    ) -> str:
        if step in ("fill", "send"):  # the adapter opened the form before this click came
            opened = await self.forms.opened_by(form_id, actor)
            note = opened if isinstance(opened, str) else None
        else:
            replied = await self.forms.answer(
                form_id, actor, step, surface=surface, card_id=message_id
            )
            note = replied.note
        if note is not None and ended(note) and message_id is not None:  # its buttons go
            with contextlib.suppress(SurfaceError):
                await surface.drop_buttons(message_id)
        return note or ""

    async def open_form(self, form_id: str, actor: Author) -> PendingForm | str:
        """The form a "Fill in" click opens (its id from :func:`actions.form_to_open`), or
        why it does not open for ``actor`` (on any worker: the form is in the store)."""
        return await self.forms.opened_by(form_id, actor)

    async def answer_form(
        self, form_id: str, actor: Author, values: Mapping[str, Any], surface: Surface | None
    ) -> FormReply:
        """A form sent: checked against its schema, then sent to the server that asked."""
        return await self.forms.answer(form_id, actor, "send", values, surface)

    async def explain(self, form_id: str, actor: Author, text: str) -> str:
        """The "what went wrong?" form sent (its id from :func:`actions.explain_after`);
        what to tell the person."""
        match actions.parse(form_id):
            case actions.Explain(run_id):
                return await self.feedback.note(run_id, actor, text)
            case _:
                log.info("a form %r sent by %s is not one this version opens", form_id, actor.id)
                return "That form is no longer active."

    # --- what commands and adapters ask of a thread (bot.thread.operations) ---

    async def has_session(self, key: ThreadKey) -> bool:
        return await self.operations.has_session(key)

    async def latest_thread(self, prefix: str) -> ThreadKey | None:
        return await self.operations.latest_thread(prefix)

    async def describe(self, key: ThreadKey) -> str:
        return await self.operations.describe(key)

    def refusal(self, actor: Author, key: ThreadKey) -> str | None:
        return self.operations.refusal(actor, key)

    async def choose_model(self, key: ThreadKey, name: str, actor: Author) -> str:
        return await self.operations.choose_model(key, name, actor)

    async def load_skill(self, key: ThreadKey, name: str, actor: Author) -> str:
        return await self.operations.load_skill(key, name, actor)

    async def reset(self, key: ThreadKey, surface: Surface) -> None:
        await self.operations.reset(key, surface)

    async def quiet(self, key: ThreadKey, on: bool | None, actor: Author) -> str:
        return await self.operations.quiet(key, on, actor)

    # --- what a person is shown outside any thread (bot.thread.overview) ---

    def abilities(self) -> tuple[Ability, ...]:
        return self.overview.abilities()

    async def home(self, person: Author, within: str) -> Home:
        return await self.overview.home(person, within)

    # --- work that comes from elsewhere: a schedule, another worker ---

    async def _scheduled_answer(
        self, key: ThreadKey, message: UserMessage, author: Author, surface: Surface, notice: str
    ) -> Awaitable[None] | None:
        return await self.answers.scheduled_answer(key, message, author, surface, notice)

    def _pick_up(self, key: ThreadKey, message: UserMessage) -> Awaitable[None] | None:
        return self.answers.pick_up(key, message)

    def _take_over(self, key: ThreadKey) -> None:
        self.answers.take_over(key)

    async def _nudge(self, key: str) -> None:
        """Tell the other workers something for ``key`` is in the store (a form answered, a
        sign-in's callback handed over)."""
        await self.work.nudge(ThreadKey(key))

    def _heard(self, key: ThreadKey) -> None:
        for hearer in self._hearers:
            hearer(key)

    def _lost(self, key: ThreadKey) -> None:
        self.supervisor.abandon(key)


def _cap(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit], True


def _cut_notice(original: int, kept: int) -> str:
    return f"Your message was {original:,} characters long; I read only the first {kept:,}."


def _configured_model(settings: Settings, clock: Clock) -> Model:
    """The configured model, abandoned when it sends nothing for the first-token timeout."""
    model = build_openai_model(settings, clock, rng=random.Random())
    return FirstTokenLimit(model, clock, settings.model_first_token_timeout_s)
