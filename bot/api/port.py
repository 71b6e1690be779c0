"""What an adapter may call on the core: the one narrow interface every adapter is typed
against (:class:`bot.core.Core` implements it; tests may hand an adapter anything that does)."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, Literal, Protocol

from bot.api.forms import FormReply, PendingForm
from bot.api.home import Ability, Home
from bot.api.inbound import Author, Inbound, ThreadKey
from bot.api.shortcuts import Note, Shortcut
from bot.api.surface import Surface
from bot.infra.clock import Clock
from bot.memory.service import Memories
from bot.scheduler.prompts import PromptSchedules
from bot.thread.reach import ChannelOf, DirectOf, NameOf, SurfaceFactory

Stopped = Literal["stopping", "nothing", "refused"]
"""What a Stop did: the run is being stopped, nothing was running, or the person may not."""


class CoreApi(Protocol):
    @property
    def clock(self) -> Clock: ...

    @property
    def model_label(self) -> str: ...

    @property
    def schedules(self) -> PromptSchedules:
        """The threads' scheduled prompts (``/threadline schedules``)."""
        ...

    @property
    def memory(self) -> Memories:
        """The threads' and channels' memories (``/threadline memory``)."""
        ...

    async def admit(self, inbound: Inbound, surface: Surface) -> Awaitable[None] | None:
        """Take ``inbound``'s place in its thread now; the returned work answers it (None: a
        redelivery, or handed to the thread's running run)."""
        ...

    async def handle(self, inbound: Inbound, surface: Surface) -> None:
        """``admit`` and the work it returns, awaited."""
        ...

    async def on_action(
        self, action_id: str, actor: Author, surface: Surface, message_id: str | None = None
    ) -> str | None:
        """A button click; returns a private note for the clicker."""
        ...

    async def explain(self, form_id: str, actor: Author, text: str) -> str:
        """A "what went wrong?" form sent after a 👎 (its id from
        :func:`bot.api.actions.explain_after`); what to tell the person."""
        ...

    async def open_form(self, form_id: str, actor: Author) -> PendingForm | str:
        """The form an MCP server asks for, to show ``actor`` (a "Fill in" click, its id from
        :func:`bot.api.actions.form_to_open`), or why it does not open for them; on any
        worker."""
        ...

    async def answer_form(
        self, form_id: str, actor: Author, values: Mapping[str, Any], surface: Surface | None
    ) -> FormReply:
        """The form sent: each field as typed (text), picked (a text or a list of texts) or
        ticked (a boolean); it goes to the server once every field fits its schema."""
        ...

    async def has_session(self, key: ThreadKey) -> bool: ...

    async def latest_thread(self, prefix: str) -> ThreadKey | None:
        """The thread under ``prefix`` (a channel) whose session changed last (None: none)."""
        ...

    async def describe(self, key: ThreadKey) -> str: ...

    async def reset(self, key: ThreadKey, surface: Surface) -> None: ...

    async def load_skill(self, key: ThreadKey, name: str, actor: Author) -> str:
        """``/threadline skill NAME``: load a skill into the thread; what to tell the person."""
        ...

    async def stop(self, key: ThreadKey, actor: Author, run_id: str | None = None) -> Stopped:
        """Stop the thread's run, if ``actor`` may (the same right as giving a command)."""
        ...

    async def choose_model(self, key: ThreadKey, name: str, actor: Author) -> str:
        """``/threadline model [NAME]``: show or change the thread's model; what to tell the person."""
        ...

    async def quiet(self, key: ThreadKey, on: bool | None, actor: Author) -> str:
        """``/threadline quiet`` (``on``) or ``listen``: answer the thread only when mentioned,
        or every message again (None: the other of the two); what to tell the person."""
        ...

    async def on_shortcut(
        self, shortcut: Shortcut, key: ThreadKey, actor: Author, surface: Surface
    ) -> Note:
        """A shortcut on a message of the thread ``key``; the private note for the person,
        with any buttons (reset asks to confirm)."""
        ...

    def refusal(self, actor: Author, key: ThreadKey) -> str | None:
        """Why ``actor`` may not give a command about the thread ``key`` (None: they may)."""
        ...

    def abilities(self) -> tuple[Ability, ...]:
        """The tools the bot may use, by name (what it can do, for people)."""
        ...

    async def home(self, person: Author, within: str) -> Home:
        """What ``person`` is shown outside any thread under ``within`` (a workspace's key
        parts, ``slack:T123``): the tools, the threads they spoke in, the approval requests
        they may decide now."""
        ...

    async def wait_idle(self) -> None: ...

    def register_surfaces(
        self,
        prefix: str,
        factory: SurfaceFactory,
        channel_of: ChannelOf | None = None,
        direct: DirectOf | None = None,
        name_of: NameOf | None = None,
    ) -> None: ...
