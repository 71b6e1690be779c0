"""Patterns the model or a setting supplies (``grep``'s regular expression, ``list_files``'
glob), compiled for matching in time linear in the text. The one home of ``re2``.

Why not Python's ``re``: it backtracks, so ``(a+)+$`` against 28 ``a`` and a ``!`` takes
seconds and every further ``a`` doubles it; and it holds the GIL while it matches, so running
it in a thread does not help: the event loop, and with it every other thread of the bot, waits
too. RE2 (``google-re2``) runs an automaton instead: no backtracking, time linear in the text,
and it releases the GIL while it matches. What it leaves out is what needs backtracking
(backreferences, lookahead and lookbehind, atomic groups, possessive quantifiers); such a
pattern is a :class:`~bot.tools.base.ToolError` that names what is not supported.

Patterns are compiled without capturing groups: the callers only ask whether a text matches,
which RE2 answers with its fastest engine.
"""

from __future__ import annotations

from typing import Protocol

import re2  # type: ignore[import-untyped]

from bot.tools.base import ToolError

MAX_MEMORY = 64 << 20
"""Bytes RE2 may use for one compiled pattern and its automata; beyond, it compiles an error."""
SYNTAX = (
    "patterns use RE2 syntax (like Python's re, without backreferences, lookahead, "
    "lookbehind, atomic groups or possessive quantifiers)"
)
_UNSUPPORTED = (
    # (what the pattern holds, what RE2 lacks), checked in order
    ("(?=", "lookahead (?=...)"),
    ("(?!", "negative lookahead (?!...)"),
    ("(?<=", "lookbehind (?<=...)"),
    ("(?<!", "negative lookbehind (?<!...)"),
    ("(?P=", "named backreferences (?P=name)"),
    ("(?>", "atomic groups (?>...)"),
    ("(?(", "conditionals (?(...)...)"),
    ("++", "possessive quantifiers (++, *+, ?+)"),
    ("*+", "possessive quantifiers (++, *+, ?+)"),
    ("?+", "possessive quantifiers (++, *+, ?+)"),
    ("\\Z", "\\Z (write \\z for the end of the text)"),
)


class Matcher(Protocol):
    """A compiled pattern; whether it matches somewhere in, or the whole of, a text."""

    def search(self, text: str) -> object: ...

    def fullmatch(self, text: str) -> object: ...


def regex(pattern: str) -> Matcher:
    """``pattern`` compiled by RE2; a ToolError naming what is wrong or not supported."""
    return _compile(pattern, pattern, "regular expression")


def glob(pattern: str) -> Matcher:
    """A shell glob (``*``, ``?``, ``[abc]``, ``[!abc]``, as :mod:`fnmatch` reads them),
    compiled by RE2: match names with ``fullmatch``."""
    return _compile(pattern, "(?s:" + glob_to_regex(pattern) + ")", "glob")


def glob_to_regex(pattern: str) -> str:
    """The RE2 syntax for the glob ``pattern``. :func:`fnmatch.translate` writes its ``*`` with
    lookahead and a backreference, which RE2 lacks; RE2 needs neither to stay linear."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        i += 1
        if char == "*":
            if not out or out[-1] != ".*":  # ** is *
                out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            end = _class_end(pattern, i)
            if end < 0:
                out.append("\\[")
            else:
                out.append(_class(pattern[i:end]))
                i = end + 1
        else:
            out.append(_literal(char))
    return "".join(out)


def _class_end(pattern: str, start: int) -> int:
    """Where the ``]`` closing the class that opens before ``start`` is, or -1 when none does
    (then ``[`` is itself)."""
    i = start
    if i < len(pattern) and pattern[i] == "!":
        i += 1
    if i < len(pattern) and pattern[i] == "]":  # a ] first is a member
        i += 1
    return pattern.find("]", i)


def _class(body: str) -> str:
    negate = body.startswith("!")
    if negate:
        body = body[1:]
    members: list[str] = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            low, high = body[i], body[i + 2]
            if low <= high:  # fnmatch drops a reversed range
                members.append(f"{_member(low)}-{_member(high)}")
            i += 3
        else:
            members.append(_member(body[i]))
            i += 1
    if not members:  # fnmatch: [!] matches nothing, [!x-a] anything
        return "." if negate else "[^\\x00-\\x{10FFFF}]"
    return "[" + ("^" if negate else "") + "".join(members) + "]"


def _member(char: str) -> str:
    return "\\" + char if char in "\\]^-[" else char


def _literal(char: str) -> str:
    return "\\" + char if char.isascii() and not char.isalnum() and char != "_" else char


def _compile(pattern: str, source: str, kind: str) -> Matcher:
    options = re2.Options()
    options.never_capture = True
    options.log_errors = False
    options.max_mem = MAX_MEMORY
    try:
        compiled: Matcher = re2.compile(source, options)
    except re2.error as exc:
        raise ToolError(_problem(pattern, kind, exc)) from None
    return compiled


def _problem(pattern: str, kind: str, exc: Exception) -> str:
    raw = exc.args[0] if exc.args else b""
    reason = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    lacking: list[str] = []
    if kind == "regular expression":
        lacking = [what for mark, what in _UNSUPPORTED if mark in pattern]
        if any(f"\\{d}" in pattern for d in "123456789") and "invalid escape" in reason:
            lacking.insert(0, "backreferences (\\1)")
    if lacking:
        unique = list(dict.fromkeys(lacking))
        return f"{kind} {pattern!r} uses what is not supported: {', '.join(unique)}; {SYNTAX}"
    return f"invalid {kind} {pattern!r}: {reason or 'not accepted'}; {SYNTAX}"
