"""What an MCP server lists, made acceptable to a model API: tool names that match
``^[a-zA-Z0-9_-]{1,64}$`` once prefixed (with the way back to the server's own names), and input
schemas that are a JSON object with no ``$ref`` left (local references inlined, to a bounded
depth). A schema that cannot be fixed keeps its tool from being offered; every change is
reported so that it can be logged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from bot.tools.toolkit import prefixed

MAX_NAME = 64
MAX_DEPTH = 8
"""How many ``$ref`` hops are inlined along one path; deeper, and where a reference repeats
itself (a recursive schema), any value is accepted (the server still checks it)."""
MAX_NODES = 5_000
MAX_DESCRIPTION = 1_024
_NOT_ALLOWED = re.compile(r"[^a-zA-Z0-9_-]")
_DATA_KEYS = frozenset({"enum", "const", "default", "examples"})
"""Keys whose values are data, not schemas (a ``$ref`` inside them is left alone)."""


def offered_names(prefix: str, originals: Iterable[str]) -> dict[str, str]:
    """The name each of a server's tools is offered under, to its own name.

    A valid name keeps its form; others have each character outside ``[a-zA-Z0-9_-]`` replaced
    by ``_`` and are cut to fit; a name taken already gets ``_2``, ``_3``… Names are settled in a
    fixed order (valid ones first, then alphabetically), so the same list always maps the same way.
    """
    room = MAX_NAME - len(prefixed(prefix, ""))
    taken: dict[str, str] = {}
    ordered = sorted(
        set(originals), key=lambda n: (_NOT_ALLOWED.search(n) is not None or len(n) > room, n)
    )
    for original in ordered:
        base = _NOT_ALLOWED.sub("_", original)[:room] or "tool"
        candidate, n = base, 2
        while candidate in taken:
            suffix = f"_{n}"
            candidate, n = base[: room - len(suffix)] + suffix, n + 1
        taken[candidate] = original
    return {prefixed(prefix, short): original for short, original in taken.items()}


@dataclass
class FixedSchema:
    schema: dict[str, Any] | None
    """``None``: the tool cannot be offered (``notes`` say why)."""
    notes: list[str] = field(default_factory=list)


def fix_schema(raw: Any) -> FixedSchema:
    if raw is None:
        return FixedSchema(
            {"type": "object", "properties": {}}, ["no input schema: offered without arguments"]
        )
    if not isinstance(raw, dict):
        return FixedSchema(None, ["its input schema is not a JSON object"])
    notes: list[str] = []
    kind = raw.get("type")
    if kind is None:
        notes.append("its input schema has no type: made an object")
    elif kind != "object":
        return FixedSchema(None, [f"its input schema is of type {kind!r}, not an object"])
    inliner = _Inliner(raw, notes)
    try:
        body = inliner.node({k: v for k, v in raw.items() if k not in ("$schema", "$id")}, 0, ())
    except _TooLarge:
        return FixedSchema(
            None, [f"its input schema passes {MAX_NODES} nodes once its $refs are inlined"]
        )
    assert isinstance(body, dict)
    body["type"] = "object"
    try:
        json.dumps(body)
    except (TypeError, ValueError):
        return FixedSchema(None, ["its input schema is not plain JSON"])
    return FixedSchema(body, notes)


def description(text: str, fallback: str) -> str:
    text = text.strip() or fallback
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"


class _TooLarge(Exception):
    pass


class _Inliner:
    def __init__(self, root: dict[str, Any], notes: list[str]) -> None:
        self.root = root
        self.notes = notes
        self.nodes = 0

    def node(self, value: Any, hops: int, seen: tuple[str, ...]) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _TooLarge
        if isinstance(value, list):
            return [self.node(v, hops, seen) for v in value]
        if not isinstance(value, dict):
            return value
        if isinstance(ref := value.get("$ref"), str):
            return self.ref(ref, value, hops, seen)
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in ("$defs", "definitions"):
                continue
            out[key] = item if key in _DATA_KEYS else self.node(item, hops, seen)
        if out.get("type") == "array" and "items" not in out:
            out["items"] = {}
            self._note("an array without items: items may be anything")
        return out

    def ref(self, ref: str, holder: dict[str, Any], hops: int, seen: tuple[str, ...]) -> Any:
        siblings = {k: v for k, v in holder.items() if k != "$ref"}
        target = _pointer(self.root, ref)
        if target is None:
            self._note(f"$ref {ref!r} is not in the schema: that value may be anything")
            return self.node(siblings, hops, seen)
        if ref in seen:
            self._note(
                f"$ref {ref!r} refers to itself: inlined once, deeper levels may be anything"
            )
            return self.node(siblings, hops, seen)
        if hops >= MAX_DEPTH:
            self._note(f"$refs nest deeper than {MAX_DEPTH} levels: deeper levels may be anything")
            return self.node(siblings, hops, seen)
        self._note("its $refs were inlined")
        inlined = self.node(target, hops + 1, (*seen, ref))
        if isinstance(inlined, dict):
            return {**inlined, **self.node(siblings, hops, seen)}
        return inlined

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def _pointer(root: dict[str, Any], ref: str) -> Any:
    """The part of ``root`` a local reference (``#/$defs/Filter``) points at, or None."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    found: Any = root
    for raw in ref[2:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(found, dict) and part in found:
            found = found[part]
        elif isinstance(found, list) and part.isdigit() and int(part) < len(found):
            found = found[int(part)]
        else:
            return None
    return found
