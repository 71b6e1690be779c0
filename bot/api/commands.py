"""``/threadline status|reset|stop|quiet|listen|model|schedules|memory|skill``: what each does in a thread,
for every platform. An adapter turns its platform's command into a :data:`Command` (Discord's
options, Slack's text through :func:`parse`), names the thread, and shows the answer to the
person alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.api.inbound import Author, ThreadKey
from bot.api.port import CoreApi, Stopped
from bot.api.surface import Surface
from bot.errors import Refused
from bot.infra.text import valid_text


@dataclass(frozen=True, slots=True)
class Kept:
    """``schedules [cancel ID]`` and ``memory [forget ID]``: the thread's list, or the one
    with that id removed."""

    what: Literal["schedules", "memory"]
    target: str = ""

    def __str__(self) -> str:
        removing = {"schedules": "cancel", "memory": "forget"}[self.what]
        return f"{self.what} {removing}:{self.target}" if self.target else self.what


@dataclass(frozen=True, slots=True)
class LoadSkill:
    """``skill NAME``."""

    name: str

    def __str__(self) -> str:
        return f"skill {self.name}"


@dataclass(frozen=True, slots=True)
class ChooseModel:
    """``model [NAME|default]``: show the thread's model, or change it for this thread only."""

    name: str = ""

    def __str__(self) -> str:
        return f"model {self.name}".rstrip()


Command = Literal["status", "reset", "stop", "quiet", "listen"] | Kept | LoadSkill | ChooseModel
CANNOT = "You can't use Threadline here."
STOPPED: dict[Stopped, str] = {
    "stopping": "Stopping the run in this thread.",
    "nothing": "Nothing is running in this thread.",
    "refused": CANNOT,
}
RESET_DONE = "Done: the next message in this thread starts a fresh conversation."
USAGE = """\
`/threadline status` — model, state, usage and todos of the thread
`/threadline reset` — forget the thread's conversation and start afresh
`/threadline stop` — stop the run in progress
`/threadline quiet` — answer this thread only when a message mentions the bot
`/threadline listen` — answer every message of this thread again
`/threadline model [NAME|default]` — show or change the model of this thread only
`/threadline schedules [cancel ID]` — the thread's scheduled prompts; cancel one by id
`/threadline memory [forget ID]` — what the bot remembers here; forget one by id
`/threadline skill NAME` — load a skill into the thread"""
_PLAIN = frozenset({"status", "reset", "stop", "quiet", "listen"})
_REMOVING = {"schedules": "cancel", "memory": "forget"}


class NotACommand(ValueError):
    """Text that is not a ``/threadline`` command; its message says what is accepted."""


def parse(text: str) -> Command:
    """The command in ``text`` (what follows ``/threadline``), e.g. ``schedules cancel s3``,
    ``memory forget:m12``, ``model gpt-4o``; :class:`NotACommand` for anything else."""
    words = valid_text(text).split()
    if not words:
        raise NotACommand(f"Say what to do:\n{USAGE}")
    head, rest = words[0].lower(), words[1:]
    if head in _PLAIN:
        if rest:
            raise NotACommand(f"`{head}` takes nothing after it.\n{USAGE}")
        return head  # type: ignore[return-value]  # one of the literals, checked above
    if head == "model":
        if len(rest) > 1:
            raise NotACommand("Name one model: `/threadline model NAME` (or `default`).")
        return ChooseModel(rest[0] if rest else "")
    if head == "skill":
        if len(rest) != 1:
            raise NotACommand("Name one skill: `/threadline skill NAME`.")
        return LoadSkill(rest[0])
    if head in _REMOVING:
        return Kept(head, _target(head, rest))  # type: ignore[arg-type]  # a key of _REMOVING
    raise NotACommand(f"I don't know `{words[0][:40]}`. I know:\n{USAGE}")


def _target(what: str, rest: list[str]) -> str:
    """``cancel s3``, ``cancel:s3`` or ``s3`` after ``schedules`` (``forget`` after ``memory``)."""
    verb = _REMOVING[what]
    joined = " ".join(rest)
    for form in (f"{verb}:", f"{verb} "):
        if joined.lower().startswith(form):
            joined = joined[len(form) :]
    target = joined.strip()
    if " " in target:
        raise NotACommand(f"Name one id: `/threadline {what} {verb} ID`.")
    return target


async def run_command(
    core: CoreApi,
    command: Command,
    key: ThreadKey,
    surface: Surface,
    actor: Author,
) -> str:
    """What the command does in the thread ``key``; returns the answer for the person."""
    if core.refusal(actor, key) is not None:
        return CANNOT
    if isinstance(command, Kept):
        return await _kept(core, command, key)
    if isinstance(command, LoadSkill):
        return await core.load_skill(key, command.name, actor)
    if isinstance(command, ChooseModel):
        return await core.choose_model(key, command.name, actor)
    if command == "status":
        return await core.describe(key)
    if command == "reset":
        await core.reset(key, surface)
        return RESET_DONE
    if command in ("quiet", "listen"):
        return await core.quiet(key, command == "quiet", actor)
    return STOPPED[await core.stop(key, actor)]


async def _kept(core: CoreApi, command: Kept, key: ThreadKey) -> str:
    try:
        if command.what == "schedules" and command.target:
            removed = await core.schedules.cancel(key, command.target)
            return f"Cancelled {core.schedules.describe(removed)}"
        if command.what == "schedules":
            return await core.schedules.listing(key)
        if command.target:
            forgotten = await core.memory.forget(key, command.target)
            return f"Forgot {forgotten.id}: {forgotten.note[:300]}"
        return await core.memory.listing(key)
    except Refused as exc:
        return f"Nothing changed: {exc}"
