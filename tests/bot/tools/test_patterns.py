"""Patterns from the model in linear time: ``grep`` and ``list_files`` as the engine calls them,
on input that makes a backtracking matcher take longer than the universe has left, and the
glob translation checked against :mod:`fnmatch` for any pattern and name."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.api.inbound import ThreadKey
from bot.infra.clock import ManualClock
from bot.sessions.model import Session
from bot.tools import patterns
from bot.tools.base import ToolContext, ToolError
from bot.tools.builtin.workspace import workspace_tools
from bot.tools.sandbox import Workspace

KEY = "slack:T1:C1:1700000000.0001"
PATHOLOGICAL = "a" * 10_000 + "!"


class Thread:
    """One thread's file tools (no command runner: none is needed here)."""

    def __init__(self, root: Path, search_s: float = 20.0) -> None:
        self.tools = {t.name: t for t in workspace_tools(root, None, search_s=search_s)}
        self.ctx = ToolContext(ThreadKey(KEY), Session(key=ThreadKey(KEY)), None, ManualClock())
        self.dir = Workspace.for_thread(root, KEY, None).root

    async def __call__(self, name: str, **arguments: Any) -> str:
        item = self.tools[name]
        return await item.invoke(self.ctx, item.parse(json.dumps(arguments)))


@pytest.fixture
def thread(tmp_path: Path) -> Thread:
    return Thread(tmp_path / "workspaces")


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("(a+)+$", PATHOLOGICAL, False),
        ("(a+)+$", "a" * 10_000, True),
        ("(a|aa)+$", PATHOLOGICAL, False),
        ("(a|aa)+!$", PATHOLOGICAL, True),
        ("(.*a){20}", PATHOLOGICAL, True),
        ("(.*a){20}b", PATHOLOGICAL, False),
        ("^(a?){30}a{30}$", "a" * 30, True),
        ("(x+x+)+y", "x" * 10_000, False),
    ],
)
async def test_catastrophic_patterns_answer_right(
    thread: Thread, pattern: str, text: str, matches: bool
) -> None:
    await thread("write_file", path="evil.txt", content=f"first line\n{text}\nlast line\n")
    out = await thread("grep", pattern=pattern)
    expected = f"evil.txt:2: {text[:300]}" if matches else f"No matches for {pattern!r} in '.'."
    assert out == expected


@pytest.mark.parametrize(
    ("pattern", "named"),
    [
        (r"(a)\1", r"backreferences (\1)"),
        (r"(?P<x>a)(?P=x)", "named backreferences (?P=name)"),
        (r"foo(?=bar)", "lookahead (?=...)"),
        (r"foo(?!bar)", "negative lookahead (?!...)"),
        (r"(?<=foo)bar", "lookbehind (?<=...)"),
        (r"(?<!foo)bar", "negative lookbehind (?<!...)"),
        (r"(?>a+)b", "atomic groups (?>...)"),
        (r"a++b", "possessive quantifiers"),
        (r"end\Z", r"write \z for the end of the text"),
    ],
)
async def test_unsupported_syntax_is_an_error_naming_it(
    thread: Thread, pattern: str, named: str
) -> None:
    await thread("write_file", path="a.txt", content="aa foobar\n")
    with pytest.raises(ToolError) as raised:
        await thread("grep", pattern=pattern)
    message = str(raised.value)
    assert f"regular expression {pattern!r} uses what is not supported" in message
    assert named in message
    assert "RE2 syntax" in message


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(unclosed", "missing )"),
        ("[z-a]", "invalid character class range"),
        ("a{2,1}", "repetition"),
    ],
)
async def test_an_invalid_pattern_is_an_error_saying_why(
    thread: Thread, pattern: str, reason: str
) -> None:
    await thread("write_file", path="a.txt", content="a\n")
    with pytest.raises(ToolError, match="invalid regular expression") as raised:
        await thread("grep", pattern=pattern)
    assert reason in str(raised.value)


async def test_python_syntax_re2_shares_still_works(thread: Thread) -> None:
    await thread("write_file", path="a.py", content="def f(x):\n    return x  # TODO\n")
    assert await thread("grep", pattern=r"(?i)^\s+RETURN\b.*(?P<note>todo)$") == (
        "a.py:2:     return x  # TODO"
    )
    assert await thread("grep", pattern=r"def \w+\(\w\):\Z".replace(r"\Z", r"\z")) == (
        "a.py:1: def f(x):"
    )


async def test_a_search_past_its_time_answers_with_what_it_found(tmp_path: Path) -> None:
    thread = Thread(tmp_path / "workspaces", search_s=0.01)
    lines = "".join(f"line {n}\n" for n in range(1_000_000))  # seconds to search, not 0.01
    (thread.dir / "a.txt").write_text("line 0 first\n")
    (thread.dir / "b.txt").write_text(lines)
    out = await thread("grep", pattern="^line", max_results=1_000)
    *found, note = out.split("\n")
    assert note.startswith("[stopped after 0.01 s, ")
    assert note.endswith(
        "files looked at: what was found so far is above; narrow the path or the pattern]"
    )
    assert all(line.startswith(("a.txt:1: ", "b.txt:")) for line in found)
    assert len(found) < 1_000


async def test_list_files_takes_globs_in_linear_time(thread: Thread) -> None:
    name = "a" * 200 + ".txt"
    await thread("write_file", path=name, content="x")
    await thread("write_file", path="src/main.py", content="x")
    assert await thread("list_files", pattern="*a*a*a*a*a*a*a*a*a*a*a*b") == (
        "Nothing under '.' matches '*a*a*a*a*a*a*a*a*a*a*a*b'."
    )
    assert await thread("list_files", pattern="[!.]*.p?") == "src/main.py (1 bytes)"
    assert await thread("list_files", pattern="(?=x)*") == "Nothing under '.' matches '(?=x)*'."


@settings(max_examples=400, deadline=None)
@given(
    pattern=st.text(alphabet="ab.*?[]!-^\\(", max_size=8),
    name=st.text(alphabet="ab.-^]\\![(", max_size=8),
)
def test_a_glob_matches_what_fnmatch_matches(pattern: str, name: str) -> None:
    assert bool(patterns.glob(pattern).fullmatch(name)) == fnmatch.fnmatchcase(name, pattern)
