"""What a server may ask of the client while one of its tools runs, in our own words: a form
or a link for a person (elicitation), the directories it may work in (roots), a model's answer
(sampling). The connection (:mod:`bot.mcp.sdk.connection`) hands each such request to the
:class:`Asker` of the call it belongs to; who answers — the thread's person through a form in
the thread (:mod:`bot.mcp.forms`), the terminal of ``threadline mcp try`` — is the asker's
business.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from bot.mcp.form_schema import Form, Value

Action = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True, slots=True)
class FormAsked:
    """A form (``url`` empty) or a link (``form`` None) the server asks a person about."""

    server: str
    tool: str
    """The tool (its offered name) whose call asks."""
    message: str
    form: Form | None = None
    url: str = ""


@dataclass(frozen=True, slots=True)
class Answer:
    action: Action
    content: dict[str, Value] | None = None


@dataclass(frozen=True, slots=True)
class Picture:
    """An image a tool returned."""

    mime: str
    data: bytes
    for_model: bool = True
    """Its audience includes the assistant (or is not said)."""
    for_people: bool = True
    """Its audience includes the user (or is not said)."""


@dataclass(frozen=True, slots=True)
class Returned:
    """A file a tool returned: an embedded resource's bytes (a report, a PDF, a CSV...) or
    audio."""

    name: str
    """The name its resource's URI ends with, as the server wrote it (empty: none)."""
    mime: str
    data: bytes
    for_model: bool = True
    for_people: bool = True


@dataclass(frozen=True, slots=True)
class Output:
    """What a call returned, split by its content's audience (``annotations.audience``)."""

    text: str
    """What the model reads: content for the assistant or for anyone."""
    failed: bool = False
    shown: tuple[str, ...] = ()
    """Text for the user alone: shown in the thread, never sent to the model."""
    pictures: tuple[Picture, ...] = ()
    for_people: str = ""
    """What the model reads but for the content for the assistant alone (what a preview of
    the call may show people)."""
    hidden: bool = False
    """Some of :attr:`text` is for the assistant alone."""
    files: tuple[Returned, ...] = ()


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a sampling request."""

    role: Literal["user", "assistant"]
    text: str


@dataclass(frozen=True, slots=True)
class SampleAsked:
    server: str
    tool: str
    turns: tuple[Turn, ...]
    system: str = ""
    max_tokens: int = 0
    """What the server asked for (the operator's cap applies on top)."""


@dataclass(frozen=True, slots=True)
class Sampled:
    text: str
    model: str
    stop_reason: str = "endTurn"


class Refused(Exception):
    """The request is refused; the server gets an error with this reason (never raised past
    the connection)."""


class Asker(Protocol):
    """Answers the requests a server makes during one call."""

    async def elicit(self, asked: FormAsked) -> Answer: ...

    async def sample(self, asked: SampleAsked) -> Sampled:
        """Raises :class:`Refused` when the request is not run."""
        ...

    def roots(self) -> Sequence[Path]:
        """The directories the server may work in."""
        ...

    async def note(self, text: str) -> None:
        """Tell the people waiting for the call something went wrong (a form the server
        describes badly)."""
        ...


@dataclass
class NobodyAsks:
    """The asker of a connection with no call of a thread running: forms are declined,
    sampling is refused, no roots."""

    why: str = "no thread's call is running on this server"
    declined: list[FormAsked] = field(default_factory=list)

    async def elicit(self, asked: FormAsked) -> Answer:
        self.declined.append(asked)
        return Answer("decline")

    async def sample(self, asked: SampleAsked) -> Sampled:
        raise Refused(self.why)

    def roots(self) -> Sequence[Path]:
        return ()

    async def note(self, text: str) -> None:
        return None
