"""Toolkits with state: what choosing and encoding a thread's tools costs per model call.

200 tools across 10 in-process toolkits (20 each). Each toolkit keeps a per-thread state (a
list of "items" the thread created) and offers its tools according to it: half of its tools
take an ``item`` parameter whose enum is the thread's items, and are offered only once the
thread has one. The skills toolkit comes on top, with 30 skills on disk (``load_skill``'s
enum: the ones the thread has not loaded; the loaded ones go into the system prompt).

Per model call, as the engine does it: ``ToolRegistry.specs(key, session)``, encoding the
tools array (:class:`bot.llm.wire.WireEncoder`) and ``ToolRegistry.instructions(session)``.

* steady state: 50 threads, each with its own state, asked in turn;
* after a state change: one toolkit's state in the thread changed since the last call (a
  tool added an item), so that toolkit's 20 tools and their schemas are built again.

    python bench/toolkits.py [--rounds 20000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.stats import percentile
from bot.api.inbound import ThreadKey
from bot.llm.wire import WireEncoder
from bot.sessions.model import Session
from bot.tools import Tool, ToolContext, ToolRegistry
from bot.tools.base import AnyArguments
from bot.tools.gating import GatedToolkit, update
from bot.tools.settings import Gating
from bot.tools.skills import TOOL, SkillsToolkit
from bot.tools.state import set_state
from bot.tools.toolkit import State

TOOLKITS = 10
TOOLS_EACH = 20
THREADS = 50
SKILLS = 30


async def _noop(ctx: ToolContext, **arguments: Any) -> str:
    return "ok"


class Items:
    """A toolkit whose tools follow the thread's items."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._built: dict[Hashable, dict[str, Tool]] = {}

    def version(self, key: str | None, state: State) -> Hashable:
        return tuple(state.get("items", ()))

    def tools(self, key: str | None, state: State) -> Mapping[str, Tool]:
        version = self.version(key, state)
        found = self._built.get(version)
        if found is None:
            found = self._built[version] = self._build(list(version))
        return found

    def _build(self, items: list[str]) -> dict[str, Tool]:
        found: dict[str, Tool] = {}
        for n in range(TOOLS_EACH):
            name = f"{self.name}__tool{n}"
            properties: dict[str, Any] = {"note": {"type": "string", "description": "A note."}}
            if n % 2:
                if not items:
                    continue
                properties["item"] = {
                    "type": "string",
                    "enum": items,
                    "description": "One of the thread's items.",
                }
            schema = {"type": "object", "properties": properties, "required": sorted(properties)}
            found[name] = Tool(
                name, f"Tool {n} of {self.name}.", AnyArguments, _noop, schema=schema
            )
        return found

    def missing(self, key: str | None, name: str, state: State) -> str:
        return "not offered"

    def instructions(self, state: State) -> str:
        return ""

    def status(self, state: State) -> list[str]:
        return []


def _gated(name: str) -> GatedToolkit:
    """20 tools with declared gating: every other one needs the state ``open``, every third
    takes its ``item`` from the context's ``items`` (an enum), one opens, one closes."""
    tools: list[tuple[Tool, Gating]] = []
    for n in range(TOOLS_EACH):
        properties: dict[str, Any] = {"note": {"type": "string", "description": "A note."}}
        schema = {"type": "object", "properties": properties, "required": ["note"]}
        gating = Gating(
            requires=frozenset({"open"}) if n % 2 else frozenset(),
            choices={"item": "items"} if n % 3 == 0 else {},
            enables=frozenset({"open"}) if n == 2 else frozenset(),
            disables=frozenset({"open"}) if n == 4 else frozenset(),
        )
        tools.append(
            (Tool(f"tool{n}", f"Tool {n} of {name}.", AnyArguments, _noop, schema=schema), gating)
        )
    return GatedToolkit(name, tools)


def _skills(root: Path) -> None:
    for n in range(SKILLS):
        folder = root / f"skill{n}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill{n}\ndescription: What to do for task {n}.\n---\nStep one.\n"
        )


def _per_call_us(
    registry: ToolRegistry, encoder: WireEncoder | None, sessions: list[Session], rounds: int
) -> float:
    started = time.perf_counter()
    for i in range(rounds):
        session = sessions[i % len(sessions)]
        specs = registry.specs(session.key, session)
        if encoder is not None:
            encoder.tools_json(specs)
        registry.instructions(session)
    return (time.perf_counter() - started) / rounds * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        _skills(Path(tmp))
        registry = ToolRegistry()
        for k in range(TOOLKITS):
            registry.attach(Items(f"kit{k}"))
        registry.attach(SkillsToolkit(Path(tmp)), own=(TOOL,))
        sessions = []
        for t in range(THREADS):
            session = Session(key=ThreadKey(f"slack:T1:C1:{t}"))
            for k in range(TOOLKITS):
                set_state(session, f"kit{k}", {"items": [f"item{t}-{j}" for j in range(t % 4)]})
            set_state(
                session, "skills", {"loaded": [{"name": "skill0", "text": "Step one.", "size": 9}]}
            )
            sessions.append(session)
        encoder = WireEncoder()
        for session in sessions:  # warm up: each thread's offer computed once
            encoder.tools_json(registry.specs(session.key, session))
        offered = len(registry.specs(sessions[1].key, sessions[1]))
        print(
            f"{TOOLKITS} toolkits of {TOOLS_EACH} tools and {SKILLS} skills; {offered} tools offered in a thread with items"
        )
        steady = _per_call_us(registry, encoder, sessions, args.rounds)
        choosing = _per_call_us(registry, None, sessions, args.rounds)
        print(
            f"  steady state ({THREADS} threads in turn): {steady:.1f} µs per model call "
            f"({choosing:.1f} µs of it choosing the thread's tools and its skills note)"
        )
        samples = []
        session = sessions[1]
        for n in range(300):
            set_state(session, "kit0", {"items": [f"new{n}", "item1-0"]})  # as a tool call does
            started = time.perf_counter()
            encoder.tools_json(registry.specs(session.key, session))
            registry.instructions(session)
            samples.append((time.perf_counter() - started) * 1e6)
        print(
            f"  after a state change: p50 {percentile(samples, 0.5):.0f} µs, p95 {percentile(samples, 0.95):.0f} µs, "
            f"mean {statistics.fmean(samples):.0f} µs (one toolkit's 20 tools rebuilt, then encoded)"
        )
        _gated_figures(Path(tmp), args.rounds)


def _gated_figures(skills: Path, rounds: int) -> None:
    """The same with declared gating (:class:`GatedToolkit`): states and context per thread."""
    registry = ToolRegistry()
    for k in range(TOOLKITS):
        registry.attach(_gated(f"gkit{k}"))
    registry.attach(SkillsToolkit(skills), own=(TOOL,))
    sessions = []
    for t in range(THREADS):
        session = Session(key=ThreadKey(f"slack:T1:C1:{t}"))
        for k in range(TOOLKITS):
            items = [f"item{t}-{j}" for j in range(t % 4)]
            update(
                session,
                f"gkit{k}",
                on=["open"] if (t + k) % 2 else [],
                context_values={"items": items},
            )
        sessions.append(session)
    encoder = WireEncoder()
    for session in sessions:
        encoder.tools_json(registry.specs(session.key, session))
    offered = len(registry.specs(sessions[1].key, sessions[1]))
    print(
        f"with declared gating ({TOOLKITS} gated toolkits of {TOOLS_EACH} tools): {offered} tools offered in one thread"
    )
    steady = _per_call_us(registry, encoder, sessions, rounds)
    choosing = _per_call_us(registry, None, sessions, rounds)
    print(
        f"  steady state ({THREADS} threads in turn): {steady:.1f} µs per model call ({choosing:.1f} µs choosing)"
    )
    samples = []
    session = sessions[1]
    for n in range(300):
        update(
            session,
            "gkit0",
            on=["open"] if n % 2 else [],
            off=[] if n % 2 else ["open"],
            context_values={"items": [f"new{n}"]},
        )
        started = time.perf_counter()
        encoder.tools_json(registry.specs(session.key, session))
        registry.instructions(session)
        samples.append((time.perf_counter() - started) * 1e6)
    print(
        f"  after a state change: p50 {percentile(samples, 0.5):.0f} µs, p95 {percentile(samples, 0.95):.0f} µs, "
        f"mean {statistics.fmean(samples):.0f} µs (one gated toolkit's offer rebuilt, then encoded)"
    )


if __name__ == "__main__":
    main()
