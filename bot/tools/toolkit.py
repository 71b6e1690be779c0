"""A toolkit: a named group of tools whose names start with ``<name>__``, and whose tools may
change while the process runs (an MCP server's list) or differ from thread to thread (a
channel narrowed to some servers; a toolkit that follows a thread's state).

A toolkit may keep a state per thread (:mod:`bot.tools.state`: a JSON object saved with the
session); the registry hands each toolkit its own state with every question. What it offers
may follow from that state: which tools, and which values a parameter may take (an enum of
what exists now). The registry asks a toolkit, per thread, which of its tools are offered now,
and caches what it tells the model by the toolkit's :meth:`Toolkit.version` for that thread.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, Protocol

from bot.tools.base import Tool

SEPARATOR = "__"

State = Mapping[str, Any]
"""A toolkit's state in one thread (empty when it has none)."""


def prefixed(toolkit: str, name: str) -> str:
    """The name a toolkit's tool is offered under (``tickets__lookup``)."""
    return f"{toolkit}{SEPARATOR}{name}"


class Toolkit(Protocol):
    @property
    def name(self) -> str:
        """The prefix of its tools' names (no ``__`` inside), and the key of its state."""
        ...

    def version(self, key: str | None, state: State) -> Hashable:
        """Changes whenever :meth:`tools` for this thread and state would answer differently."""
        ...

    def tools(self, key: str | None, state: State) -> Mapping[str, Tool]:
        """The tools offered in the thread ``key`` with ``state`` now, by their full names;
        ``None``: every tool it has."""
        ...

    def missing(self, key: str | None, name: str, state: State) -> str:
        """Why ``name`` (one of this toolkit's) is not offered in the thread now: the result
        the model sees when it calls it anyway."""
        ...

    def instructions(self, state: State) -> str:
        """What the model is told besides the tools, from the thread's state (added to the
        system prompt; empty: nothing)."""
        ...

    def status(self, state: State) -> list[str]:
        """Lines for people about the thread's state (``/threadline status``)."""
        ...
