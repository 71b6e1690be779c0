"""The tools a model may call, by name; toolkits add a ``prefix__`` namespace.

Plain tools are offered in every thread. A :class:`~bot.tools.toolkit.Toolkit` says, per
thread and per its state in that thread, which of its tools are offered now; what the model is
told is computed once per combination of the toolkits' versions and reused (a dictionary lookup
per model call).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from bot.llm.model import ToolSpec
from bot.sessions.model import Session
from bot.tools.base import AnyArguments, Tool, ToolContext, ToolError
from bot.tools.state import state
from bot.tools.toolkit import SEPARATOR, Toolkit

_MAX_CACHED = 256


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._specs: tuple[ToolSpec, ...] | None = None
        self._toolkits: dict[str, Toolkit] = {}
        self._own: dict[str, Toolkit] = {}
        self._offers: dict[tuple[Hashable, ...], tuple[ToolSpec, ...]] = {}
        self._spec_of: dict[int, tuple[Tool, ToolSpec]] = {}
        for item in tools:
            self.add(item)

    def add(self, item: Tool) -> None:
        if item.name in self._tools or item.name in self._own:
            raise ValueError(f"a tool named {item.name!r} is already registered")
        self._tools[item.name] = item
        self._specs = None
        self._offers.clear()

    def add_toolkit(self, prefix: str, tools: Iterable[Tool]) -> None:
        """Register ``tools`` as ``{prefix}__{name}`` (``github__create_pr``), in every thread."""
        for item in tools:
            self.add(item.renamed(f"{prefix}{SEPARATOR}{item.name}"))

    def attach(self, toolkit: Toolkit, *, own: Iterable[str] = ()) -> None:
        """Offer ``toolkit``'s tools, thread by thread, as it decides. ``own``: names without
        its prefix that it offers too (``cancel_schedule`` of the schedules toolkit, ``load_skill`` of the skills toolkit)."""
        if SEPARATOR in toolkit.name or toolkit.name in self._toolkits:
            raise ValueError(f"toolkit name {toolkit.name!r} is taken or contains {SEPARATOR!r}")
        names = list(own)
        taken = [n for n in names if n in self._tools or n in self._own or SEPARATOR in n]
        if taken:
            raise ValueError(f"the tool name {taken[0]!r} is taken or contains {SEPARATOR!r}")
        self._toolkits[toolkit.name] = toolkit
        self._own.update((n, toolkit) for n in names)
        self._offers.clear()

    def toolkit(self, name: str) -> Toolkit | None:
        return self._toolkits.get(name)

    def get(self, name: str, key: str | None = None, session: Session | None = None) -> Tool | None:
        """The tool the model may call under ``name`` in the thread ``key`` (whose session,
        when given, holds the toolkits' state). A toolkit's tool that is not offered there is
        a stand-in whose call fails with the toolkit's reason."""
        found = self._tools.get(name)
        if found is not None:
            return found
        toolkit = self._own.get(name)
        if toolkit is None:
            prefix, sep, _ = name.partition(SEPARATOR)
            toolkit = self._toolkits.get(prefix) if sep else None
        if toolkit is None:
            return None
        here = state(session, toolkit.name)
        offered = toolkit.tools(key, here).get(name)
        return (
            offered if offered is not None else _unavailable(name, toolkit.missing(key, name, here))
        )

    def lane(self, name: str, call_id: str = "") -> str:
        """Calls in one lane run in order: a toolkit's tools share its name as their lane (each
        sees the previous one's changes to its state); a plain tool is a lane of its own, and
        each call of a :attr:`~bot.tools.base.Tool.concurrent` tool too."""
        plain = self._tools.get(name)
        if plain is not None:
            return f"{name}:{call_id}" if plain.concurrent and call_id else name
        toolkit = self._own.get(name)
        if toolkit is None:
            prefix, sep, _ = name.partition(SEPARATOR)
            toolkit = self._toolkits.get(prefix) if sep else None
        return f"{toolkit.name}{SEPARATOR}" if toolkit is not None else name

    @property
    def names(self) -> list[str]:
        found = list(self._tools)
        for toolkit in self._toolkits.values():
            found.extend(toolkit.tools(None, state(None, toolkit.name)))
        return sorted(found)

    def specs(self, key: str | None = None, session: Session | None = None) -> tuple[ToolSpec, ...]:
        """What the model is told in the thread ``key`` (with the toolkits' state in its
        ``session``), computed once per change."""
        if self._specs is None:
            self._specs = tuple(self._spec(t) for t in self._tools.values())
        if not self._toolkits:
            return self._specs
        kits = self._toolkits.values()
        states = [state(session, t.name) for t in kits]
        versions = tuple(t.version(key, s) for t, s in zip(kits, states, strict=True))
        offer = self._offers.get(versions)
        if offer is None:
            if len(self._offers) >= _MAX_CACHED:
                self._offers.clear()
            offer = self._specs + tuple(
                self._spec(t)
                for toolkit, here in zip(kits, states, strict=True)
                for t in toolkit.tools(key, here).values()
            )
            self._offers[versions] = offer
        return offer

    def instructions(self, session: Session) -> str:
        """What the toolkits tell the model in this thread besides their tools."""
        found = (t.instructions(state(session, t.name)) for t in self._toolkits.values())
        return "\n\n".join(text for text in found if text)

    def status(self, session: Session) -> list[str]:
        """The toolkits' lines about this thread, for people."""
        return [line for t in self._toolkits.values() for line in t.status(state(session, t.name))]

    def _spec(self, item: Tool) -> ToolSpec:
        """One spec object per tool object, so that a spec encoded once stays encoded."""
        kept = self._spec_of.get(id(item))
        if kept is None or kept[0] is not item:
            if len(self._spec_of) >= 16 * _MAX_CACHED:
                self._spec_of.clear()
            kept = (item, ToolSpec(item.name, item.description, item.parameters))
            self._spec_of[id(item)] = kept
        return kept[1]


def _unavailable(name: str, reason: str) -> Tool:
    async def refuse(ctx: ToolContext, **arguments: Any) -> str:
        raise ToolError(reason)

    return Tool(name, reason, AnyArguments, refuse, side_effects=False, approval="never")
