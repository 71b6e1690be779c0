"""Declared gating for a toolkit's tools: which tools a thread is offered follows
the toolkit's state in that thread, as each tool declares it (:class:`~bot.tools.settings.Gating`).

The toolkit's state (:mod:`bot.tools.state`, saved with the session) then holds two things::

    {"states": ["ticket_open"], "context": {"tickets": ["T-1", "T-2"], "project": "infra"}}

*states* are names that are on or off; the *context* holds values by key (a list, a mapping
whose keys count, or one value). A tool is offered while its ``requires`` are on, its
``forbids`` off, each key it ``needs`` holds something and each key its ``choices`` draw from
holds some value (that parameter's enum is then what the key holds now). A successful call
turns on what it ``enables``, off what it ``disables``, and adds (``remembers``) or removes
(``forgets``) argument values in the context; a failed call changes nothing. A call to a tool
not offered now, or with a value that is not one of its choices now, is an error result naming
what it needs.

:class:`Gates` applies one toolkit's declarations to the tools it has (an MCP server's,
declared in ``threadline.toml``); :class:`GatedToolkit` is a toolkit of tools declared in code.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from bot.sessions.model import Session
from bot.tools.base import Tool, ToolContext, ToolError
from bot.tools.settings import Gating
from bot.tools.state import EMPTY, set_state, state
from bot.tools.toolkit import State, prefixed

STATES = "states"
CONTEXT = "context"
_CACHED = 64


def states(current: State) -> frozenset[str]:
    """The states that are on in a toolkit's state."""
    found = current.get(STATES, ())
    return frozenset(str(s) for s in found) if isinstance(found, list | tuple) else frozenset()


def context(current: State) -> Mapping[str, Any]:
    """The context in a toolkit's state."""
    found = current.get(CONTEXT, EMPTY)
    return found if isinstance(found, Mapping) else EMPTY


def values(current: State, key: str) -> tuple[str, ...]:
    """What the context key ``key`` holds, as the values a parameter may take."""
    found = context(current).get(key)
    if found is None or found == "" or found is False:
        return ()
    if isinstance(found, Mapping):
        return tuple(str(k) for k in found)
    if isinstance(found, list | tuple):
        return tuple(str(v) for v in found)
    return (str(found),)


def update(
    session: Session,
    toolkit: str,
    *,
    on: Iterable[str] = (),
    off: Iterable[str] = (),
    context_values: Mapping[str, Any] | None = None,
) -> None:
    """Change a toolkit's state in the session: states turned ``on`` and ``off``, context keys
    set (``None``: removed). Saved with the session's next write, as :func:`set_state`."""
    current = state(session, toolkit)
    now = (states(current) | set(on)) - set(off)
    kept = dict(context(current))
    for key, value in (context_values or {}).items():
        if value is None or value == [] or value == {}:
            kept.pop(key, None)
        else:
            kept[key] = value
    fresh = {k: v for k, v in current.items() if k not in (STATES, CONTEXT)}
    if now:
        fresh[STATES] = sorted(now)
    if kept:
        fresh[CONTEXT] = kept
    set_state(session, toolkit, fresh)


class Gates:
    """One toolkit's declarations, by the tools' offered names (a tool without one is always
    offered and changes nothing)."""

    def __init__(self, toolkit: str, declared: Mapping[str, Gating]) -> None:
        self.toolkit = toolkit
        self.declared = {name: g for name, g in declared.items() if not g.empty}
        self._states = tuple(
            sorted({s for g in self.declared.values() for s in g.requires | g.forbids})
        )
        self._keys = tuple(
            sorted({k for g in self.declared.values() for k in (*g.needs, *g.choices.values())})
        )
        self._offers: dict[tuple[Hashable, ...], tuple[Mapping[str, Tool], dict[str, Tool]]] = {}
        self._wrapped: dict[str, tuple[Tool, Tool]] = {}

    def version(self, current: State) -> Hashable:
        """Changes whenever :meth:`offer` would answer differently for the same tools."""
        if not self.declared:
            return ()
        on = states(current)
        return tuple(s in on for s in self._states), tuple(values(current, k) for k in self._keys)

    def offer(self, tools: Mapping[str, Tool], current: State) -> Mapping[str, Tool]:
        """The tools offered with the toolkit's state ``current``: the blocked ones left out,
        the choices' enums filled in; computed once per (tools, version)."""
        if not self.declared:
            return tools
        key = (id(tools), self.version(current))
        cached = self._offers.get(key)
        if cached is not None and cached[0] is tools:
            return cached[1]
        found = {}
        for name, item in tools.items():
            gating = self.declared.get(name)
            if gating is None:
                found[name] = item
            elif blocked(gating, current) is None:
                found[name] = self._with_choices(self._gated(item, gating), gating, current)
        if len(self._offers) >= _CACHED:
            self._offers.clear()
        self._offers[key] = (tools, found)
        return found

    def missing(self, name: str, current: State) -> str | None:
        """Why ``name`` is not offered with ``current`` (None: nothing declared blocks it)."""
        gating = self.declared.get(name)
        reason = None if gating is None else blocked(gating, current)
        if reason is None:
            return None
        return f"{name} is not available now: it {reason}.{self._hint(gating, current)}"

    def _hint(self, gating: Gating | None, current: State) -> str:
        """Which tools would make it available (those enabling a required state, disabling a
        forbidden one, or remembering a needed key)."""
        if gating is None:
            return ""
        on = states(current)
        helpers = sorted(
            name
            for name, g in self.declared.items()
            if (g.enables & (gating.requires - on))
            or (g.disables & gating.forbids & on)
            or (set(g.remembers) & (set(gating.needs) | set(gating.choices.values())))
        )
        return f" {' or '.join(helpers)} would change that." if helpers else ""

    def _gated(self, item: Tool, gating: Gating) -> Tool:
        """``item`` whose successful calls change the state as ``gating`` declares, and whose
        choices are checked against the context when it is called (one per tool object)."""
        kept = self._wrapped.get(item.name)
        if kept is not None and kept[0] is item:
            return kept[1]
        toolkit, function = self.toolkit, item.function

        async def gated(ctx: ToolContext, **arguments: Any) -> str:
            current = state(ctx.session, toolkit)
            if (
                reason := blocked(gating, current)
            ) is not None:  # an earlier call of the batch changed it
                raise ToolError(f"{item.name} is not available now: it {reason}")
            for parameter, key in gating.choices.items():
                value = arguments.get(parameter)
                allowed = values(current, key)
                if value is not None and str(value) not in allowed:
                    raise ToolError(
                        f"{parameter} must be one of {', '.join(allowed)} (what {key} holds now), not {value!r}"
                    )
            text = await function(ctx, **arguments)
            _succeeded(ctx.session, toolkit, gating, arguments)
            return text

        made = Tool(
            item.name,
            item.description,
            item.arguments,
            gated,
            item.side_effects,
            item.approval,
            item.executes,
            item.schema,
            item.approval_for,
            item.rule_subject,
        )
        self._wrapped[item.name] = (item, made)
        return made

    @staticmethod
    def _with_choices(item: Tool, gating: Gating, current: State) -> Tool:
        if not gating.choices:
            return item
        schema = dict(item.parameters)
        properties = dict(schema.get("properties") or {})
        for parameter, key in gating.choices.items():
            field = dict(properties.get(parameter) or {"type": "string"})
            field["enum"] = list(values(current, key))
            properties[parameter] = field
        schema["properties"] = properties
        return Tool(
            item.name,
            item.description,
            item.arguments,
            item.function,
            item.side_effects,
            item.approval,
            item.executes,
            schema,
            item.approval_for,
            item.rule_subject,
        )


def blocked(gating: Gating, current: State) -> str | None:
    """What ``gating`` needs that the state ``current`` lacks, in words (None: nothing)."""
    on = states(current)
    if missing := sorted(gating.requires - on):
        return f"needs the state {', '.join(missing)} (off now)"
    if present := sorted(gating.forbids & on):
        return f"is not available while {', '.join(present)} is on"
    if empty := sorted(
        k for k in (*gating.needs, *gating.choices.values()) if not values(current, k)
    ):
        return f"needs {', '.join(dict.fromkeys(empty))} in the thread's context (empty now)"
    return None


def _succeeded(
    session: Session, toolkit: str, gating: Gating, arguments: Mapping[str, Any]
) -> None:
    changes: dict[str, Any] = {}
    current = state(session, toolkit)
    for key, argument in gating.remembers.items():
        value = arguments.get(argument)
        if value is not None:
            held = list(values(current, key))
            changes[key] = held if str(value) in held else [*held, str(value)]
    for key, argument in gating.forgets.items():
        value = arguments.get(argument)
        if value is not None:
            changes[key] = [v for v in changes.get(key, values(current, key)) if v != str(value)]
    if gating.enables or gating.disables or changes:
        update(session, toolkit, on=gating.enables, off=gating.disables, context_values=changes)


class GatedToolkit:
    """A toolkit of tools written in code, each with its :class:`Gating`, offered as
    ``<name>__<tool>``."""

    def __init__(
        self, name: str, tools: Iterable[tuple[Tool, Gating]], *, describe: str = ""
    ) -> None:
        self.name = name
        listed = [(item.renamed(prefixed(name, item.name)), gating) for item, gating in tools]
        self._tools: dict[str, Tool] = {item.name: item for item, _ in listed}
        self.gates = Gates(name, {item.name: gating for item, gating in listed})
        self._describe = describe

    def version(self, key: str | None, state: State) -> Hashable:
        return self.gates.version(state)

    def tools(self, key: str | None, state: State) -> Mapping[str, Tool]:
        return self._tools if key is None else self.gates.offer(self._tools, state)

    def missing(self, key: str | None, name: str, state: State) -> str:
        reason = self.gates.missing(name, state)
        if reason is not None:
            return reason
        return f"{self.name} has no tool {name}; its tools: {', '.join(sorted(self._tools))}"

    def instructions(self, state: State) -> str:
        on = states(state)
        if not self._describe and not on:
            return ""
        now = f"{self.name}: on now: {', '.join(sorted(on))}." if on else ""
        return "\n".join(t for t in (self._describe, now) if t)

    def status(self, state: State) -> list[str]:
        on = states(state)
        return [f"{self.name}: {', '.join(sorted(on))}"] if on else []
