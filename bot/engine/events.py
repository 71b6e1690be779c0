"""What the engine tells the presenter while a run goes on. Nothing platform-specific."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.approvals.models import ApprovalRequest
from bot.llm.messages import Usage
from bot.mcp.pending import PendingForm
from bot.sessions.model import Todo


@dataclass(frozen=True, slots=True)
class ModelCallStarted:
    round: int
    """1 for the first model call of the run."""
    after_messages: bool = False
    """The call reads messages people wrote while the run went on (below its reply so far)."""


@dataclass(frozen=True, slots=True)
class Thinking:
    """The model began to reason before it answers; what it reasons is never shown or kept."""


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolStarted:
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class CallAllowed:
    """A call that would have asked runs without a card, allowed by a rule someone made: the
    thread shows it in full before it runs (the sink returns once it is shown)."""

    call_id: str
    name: str
    arguments: str
    allowed_by: str
    """Which rule let it run, in words."""


@dataclass(frozen=True, slots=True)
class ToolFinished:
    call_id: str
    name: str
    is_error: bool
    summary: str = ""
    """What it did, in a few words for people (exit code and output size, or the error)."""
    preview: str = ""
    """The first lines of its output."""
    side_effects: bool = False
    """A tool that can change something (its call may have had an approval card)."""


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """A call still running says how far it got (a sub-agent's step and tool)."""

    call_id: str
    name: str
    text: str


@dataclass(frozen=True, slots=True)
class TodosChanged:
    todos: tuple[Todo, ...]


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the people in the thread should know (a capped message, a limit reached)."""

    text: str


@dataclass(frozen=True, slots=True)
class ApprovalNeeded:
    """A tool call waits for a person's decision: show the card with its buttons."""

    request: ApprovalRequest
    inline: bool = False
    """Asked by a call that waits for it while the run goes on (a sub-agent's tool): the reply
    continues below the card instead of ending with it."""


@dataclass(frozen=True, slots=True)
class FormNeeded:
    """A running call's MCP server asks the run's person to fill in a form or open a link:
    show its card (the sink sets ``form.card_id`` and returns once it is shown); the reply
    continues below it."""

    form: PendingForm


@dataclass(frozen=True, slots=True)
class SignInNeeded:
    """A running call needs its person's sign-in to a per-person MCP server: show ``link`` to
    that person alone (the call waits for the sign-in to come back). Where the surface cannot
    show one person a note, the thread gets a card without the link, whose "Sign in…" shows it
    to the person alone (``wait_id``)."""

    server: str
    person_id: str
    person_name: str
    link: str
    call_id: str = ""
    """The call that waits (its run keeps it open when the process stops, not a person)."""
    wait_id: str = ""
    """The wait's id in the store, which keeps the link sealed for a "Sign in…" click ('':
    not kept, no store)."""


@dataclass(frozen=True, slots=True)
class SignInEnded:
    """The wait of a :class:`SignInNeeded` ended in this process: its card says how and loses
    its button."""

    server: str
    person_name: str
    wait_id: str
    signed_in: bool
    """The sign-in came back (else its wait expired, or the sign-in did not go through)."""


@dataclass(frozen=True, slots=True)
class Finished:
    usage: Usage
    """Tokens used by this run."""


@dataclass(frozen=True, slots=True)
class Failed:
    message: str
    """Plain words for the thread: what went wrong and what to do."""


EngineEvent = (
    ModelCallStarted
    | Thinking
    | TextDelta
    | ToolStarted
    | CallAllowed
    | ToolFinished
    | ToolProgress
    | TodosChanged
    | Notice
    | ApprovalNeeded
    | FormNeeded
    | SignInNeeded
    | SignInEnded
    | Finished
    | Failed
)
EventSink = Callable[[EngineEvent], Awaitable[None]]
