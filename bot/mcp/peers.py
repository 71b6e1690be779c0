"""The other workers sharing this one's store, as the MCP client's waits reach them: an answer
to a form (:mod:`bot.mcp.forms`) or a sign-in's callback (:mod:`bot.mcp.sign_in_desk`) may
reach a worker other than the one whose call waits. It is recorded in the store, the thread's
key is nudged, and the waiting worker hears the nudge (or reads its rows every ``poll_s``).

None where a process is alone on its store: everything is answered where it waits."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

Heard = Callable[[str], None]
"""Told of a nudge heard, with its thread's key."""


@dataclass(frozen=True, slots=True)
class Peers:
    owner: str
    """This worker's name (recorded as the owner of the forms and sign-in waits made here)."""
    alive: Callable[[str], Awaitable[bool]]
    """Whether a worker is alive (holds its presence)."""
    nudge: Callable[[str], Awaitable[None]]
    """Tells every worker to look at a thread (its key) now."""
    listen: Callable[[Heard], None]
    """Registers a hearer of the nudges."""
    poll_s: float = 1.0
    """A call waiting here reads its row this often (a nudge may be lost)."""
