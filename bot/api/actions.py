"""Every button's action id, built and read in one place.

An action id travels through the platform (Slack ``action_id``, Discord ``custom_id``, the
playground's page) and comes back with the click. It is ``<kind>:<argument>``; a new button
is a new case here and nowhere else.

==========  ======================  ===============================================
kind        argument                meaning
==========  ======================  ===============================================
approve     approval id             approve the call shown on the card
deny        approval id             deny it
always      approval id             approve, and allow the tool here from now on
exact       approval id             approve, and allow this exact call here from now on
stop        run id                  stop that run of the thread
reset       thread key              reset that thread (the confirmation of a reset)
up          run id                  👍 on that run's final answer
down        run id                  👎 on it (a one-line "what went wrong?" follows)
why         run id                  the "what went wrong?" form sent about that run
form-fill   form id                 open the form an MCP server asks for (a modal)
form-done   form id                 the link an MCP server gave was opened: accept it
form-no     form id                 decline the form or the link
form-cancel form id                 cancel it (no answer either way)
form-send   form id                 the form's own id (a modal's), when it is sent
sign-in     sign-in wait id         show its person the sign-in link, privately
==========  ======================  ===============================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.approvals.models import Choice

MAX_LENGTH = 80
"""Slack allows 255 characters, Discord 100 (with the adapter's own prefix): every id fits both."""


@dataclass(frozen=True, slots=True)
class Decide:
    choice: Choice
    approval_id: str


@dataclass(frozen=True, slots=True)
class StopRun:
    run_id: str


@dataclass(frozen=True, slots=True)
class ResetThread:
    key: str


@dataclass(frozen=True, slots=True)
class Rate:
    """👍 (``good``) or 👎 on a run's final answer."""

    run_id: str
    good: bool


@dataclass(frozen=True, slots=True)
class Explain:
    """The "what went wrong?" form about a run: its id travels as the form's own id."""

    run_id: str


FormStep = Literal["fill", "done", "no", "cancel", "send"]


@dataclass(frozen=True, slots=True)
class AnswerForm:
    """A step on a form an MCP server asks a person to fill in (:mod:`bot.mcp.forms`)."""

    step: FormStep
    form_id: str


@dataclass(frozen=True, slots=True)
class SignIn:
    """A person's "Sign in…" on the card of a sign-in a run waits for: the link is shown to
    the wait's person alone, in the click's private note (:mod:`bot.mcp.sign_in_links`)."""

    wait_id: str
    """The wait's id in the store (a hash of the link's ``state``, not a secret)."""


Action = Decide | StopRun | ResetThread | Rate | Explain | AnswerForm | SignIn
_FORM_STEPS: tuple[FormStep, ...] = ("fill", "done", "no", "cancel", "send")


def encode(action: Action) -> str:
    match action:
        case Decide(choice, approval_id):
            text = f"{choice.value}:{approval_id}"
        case StopRun(run_id):
            text = f"stop:{run_id}"
        case ResetThread(key):
            text = f"reset:{key}"
        case Rate(run_id, good):
            text = f"{'up' if good else 'down'}:{run_id}"
        case Explain(run_id):
            text = f"why:{run_id}"
        case AnswerForm(step, form_id):
            text = f"form-{step}:{form_id}"
        case SignIn(wait_id):
            text = f"sign-in:{wait_id}"
    if len(text) > MAX_LENGTH:
        raise ValueError(f"action id longer than {MAX_LENGTH} characters: {text[:40]}…")
    return text


def parse(text: str) -> Action | None:
    """The action a clicked button stands for; None for anything this version never built."""
    kind, sep, argument = text.partition(":")
    if not sep or not argument:
        return None
    if kind == "stop":
        return StopRun(argument)
    if kind == "reset":
        return ResetThread(argument)
    if kind in ("up", "down"):
        return Rate(argument, kind == "up")
    if kind == "why":
        return Explain(argument)
    if kind == "sign-in":
        return SignIn(argument)
    if kind.startswith("form-"):
        step = kind.removeprefix("form-")
        found = next((s for s in _FORM_STEPS if s == step), None)
        return AnswerForm(found, argument) if found is not None else None
    try:
        return Decide(Choice(kind), argument)
    except ValueError:
        return None


def explain_after(action_id: str) -> str | None:
    """For a 👎 click: the id of the "what went wrong?" form to open (adapters open it before
    anything else, within the platform's deadline); None for any other button."""
    match parse(action_id):
        case Rate(run_id, False):
            return encode(Explain(run_id))
        case _:
            return None


def is_feedback(action_id: str) -> bool:
    """Whether the button is a 👍 / 👎 (the platforms show them their own way)."""
    return isinstance(parse(action_id), Rate)


def form_to_open(action_id: str) -> str | None:
    """For a "Fill in" click: the id of the form to open (adapters open it at once, within the
    platform's deadline, as for :func:`explain_after`); None for any other button."""
    match parse(action_id):
        case AnswerForm("fill", form_id):
            return form_id
        case _:
            return None
