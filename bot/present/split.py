"""Split rendered text into messages that fit a platform's limit.

Cuts prefer a paragraph break, then a line break, then a space, in the second half of the room
left; only a run of text with none of those is cut hard. A cut inside a fenced code block closes
the fence at the end of one chunk and reopens it, with the same info string, at the start of the
next. The whitespace at a cut is dropped; every other character of the text is kept, in order.

The choice of each cut depends only on the text before it, so a growing text keeps its earlier
chunks (what lets a streamed reply leave finished messages alone).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

MIN_LIMIT = 32
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_SEPARATORS = ("\n\n", "\n", " ")
_LEADING_BLANK_LINES = re.compile(r"^(?:[ \t]*\n)+")
_MAX_MARKER = 8
"""Longer opening runs are left alone (no room is reserved for reopening them)."""


@dataclass(frozen=True, slots=True)
class _Fence:
    marker: str
    """The opening run of backticks or tildes."""
    opener: str
    """The whole opening line (indentation dropped), reused to reopen the block."""


@dataclass(frozen=True, slots=True)
class _Line:
    start: int
    end: int
    """Index of the line's newline (or the end of the text)."""
    fence_line: bool
    before: _Fence | None
    """The open code block at the start of the line."""
    after: _Fence | None


def split_message(text: str, limit: int) -> list[str]:
    """Chunks of ``text``, each at most ``limit`` characters; ``[]`` for blank text."""
    if limit < MIN_LIMIT:
        raise ValueError(f"limit must be at least {MIN_LIMIT}, not {limit}")
    doc = _Doc(_trim(text))
    if not doc.text:
        return []
    chunks: list[str] = []
    start = 0
    fence: _Fence | None = None
    while True:
        prefix = _reopen(fence, limit)
        if len(prefix) + len(doc.text) - start <= limit:
            chunks.append(prefix + doc.text[start:])
            return chunks
        chunk, start, fence = doc.next_chunk(start, prefix, limit)
        chunks.append(chunk)


class _Doc:
    """The text being split, with the fence state of every line."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = _scan(text)
        self.starts = [line.start for line in self.lines]

    def next_chunk(self, start: int, prefix: str, limit: int) -> tuple[str, int, _Fence | None]:
        """The chunk beginning at ``start``, where the next one begins, and the block open there."""
        reserve = 0  # grows to the length of a closing fence when the cut falls in a block
        while True:
            cut, resume = self.choose_cut(start, start + limit - len(prefix) - reserve)
            resume = self.skip_newlines(resume)
            fence = self.fence_at(cut)
            if fence is not None:
                cut, resume, fence = self.own_closing_line(
                    cut, resume, fence, start + limit - len(prefix)
                )
            piece = self.text[start:cut]
            closer = "" if fence is None else ("" if piece.endswith("\n") else "\n") + fence.marker
            if fence is not None and len(prefix) + len(piece) + len(closer) > limit:
                reserve = len(closer)
                continue
            return prefix + piece + closer, resume, fence

    def choose_cut(self, start: int, end: int) -> tuple[int, int]:
        """Where the piece ``text[start:end]`` should end, and where the next piece resumes."""
        floor = start + (end - start) // 2
        for sep in _SEPARATORS:
            at = self.text.rfind(sep, floor, end + len(sep))
            if at > start and not self.inside_fence_line(at):
                return at, at + len(sep)
        line = self.line_at(end)
        if line.fence_line and line.start < end < line.end and line.start > start:
            return line.start, line.start
        return end, end

    def own_closing_line(
        self, cut: int, resume: int, fence: _Fence, end: int
    ) -> tuple[int, int, _Fence | None]:
        """When the block's own closing line comes right after the cut, end the piece with it
        rather than closing the block here and reopening an empty one in the next chunk."""
        if resume >= len(self.text):
            return cut, resume, fence
        line = self.line_at(resume)
        if line.start != resume or not line.fence_line or line.after is not None or line.end > end:
            return cut, resume, fence
        return line.end, self.skip_newlines(line.end + 1), None

    def skip_newlines(self, pos: int) -> int:
        while pos < len(self.text) and self.text[pos] == "\n":
            pos += 1
        return pos

    def line_at(self, pos: int) -> _Line:
        return self.lines[bisect_right(self.starts, pos) - 1]

    def inside_fence_line(self, pos: int) -> bool:
        line = self.line_at(pos)
        return line.fence_line and line.start < pos < line.end

    def fence_at(self, pos: int) -> _Fence | None:
        """The block open at a cut before ``pos`` (a cut never falls inside a fence line)."""
        line = self.line_at(pos)
        return line.after if pos == line.end else line.before


def _reopen(fence: _Fence | None, limit: int) -> str:
    if fence is None:
        return ""
    if len(fence.opener) < limit // 4:
        return fence.opener + "\n"
    return fence.marker + "\n"


def _scan(text: str) -> list[_Line]:
    """Every line with the code block open before and after it."""
    lines: list[_Line] = []
    fence: _Fence | None = None
    pos = 0
    for raw in text.split("\n"):
        after = _fence_after(fence, raw)
        lines.append(_Line(pos, pos + len(raw), after != fence, fence, after))
        fence = after
        pos += len(raw) + 1
    return lines


def _fence_after(fence: _Fence | None, raw: str) -> _Fence | None:
    """CommonMark's rule: a bare run of the same character, at least as long, closes a block."""
    match = _FENCE_LINE.match(raw)
    if match is None:
        return fence
    marker, rest = match.group(1), match.group(2)
    if fence is None:
        if len(marker) > _MAX_MARKER or (marker[0] == "`" and "`" in rest):
            return None
        return _Fence(marker, raw.lstrip(" "))
    if marker[0] == fence.marker[0] and len(marker) >= len(fence.marker) and not rest.strip():
        return None
    return fence


def _trim(text: str) -> str:
    """Drop leading blank lines and trailing whitespace (platforms show neither)."""
    return _LEADING_BLANK_LINES.sub("", text.rstrip())


def open_block(text: str) -> str | None:
    """The marker of a code block left open at the end of ``text``; None when all are closed."""
    lines = _scan(_trim(text))
    fence = lines[-1].after
    return None if fence is None else fence.marker
