"""Thread keys in parts, and which rule covers which key.

A thread key is ``platform:part:part…`` (``slack:{team}:{channel}:{thread_ts}``,
``discord:{guild}:{thread}``, ``discord:dm:{channel}``, ``playground:{thread_id}``). A rule
(``[access] channels``, ``deny_channels``, a ``[channels."…"]`` section, an adapter's key
prefix) names the first parts of the keys it covers; parts are compared whole, so
``slack:T1:C0GENERAL`` covers ``slack:T1:C0GENERAL:1.0`` and not ``slack:T1:C0GENERALX:1.0``.
A trailing ``:`` changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

Parts = tuple[str, ...]


def parts(key: str) -> Parts:
    """The parts of a key or rule (a trailing ``:`` adds none)."""
    return tuple(key.removesuffix(":").split(":")) if key.strip(":") else ()


def covers(rule: str, key: str) -> bool:
    """Whether ``rule`` names the first parts of ``key`` (all of them, or fewer)."""
    wanted, found = parts(rule), parts(key)
    return bool(wanted) and found[: len(wanted)] == wanted


def any_covers(rules: Iterable[str], key: str) -> bool:
    return any(covers(rule, key) for rule in rules)


def most_specific(rules: Iterable[str], key: str) -> str | None:
    """Of the rules that cover ``key``, the one naming the most parts (None: none covers it)."""
    return max((r for r in rules if covers(r, key)), key=lambda r: len(parts(r)), default=None)


def as_prefix(rule: str) -> str:
    """The text every key the rule covers begins with (its parts and a ``:``), for a store's
    prefix search."""
    return ":".join(parts(rule)) + ":"
