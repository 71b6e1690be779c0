"""What the file tools do inside a thread's workspace: read a page of a text file, write or
edit one, list a directory, search files, every file opened through the workspace's checks.

Listing and searching run in a worker thread with a :class:`Search`: they add what they find
to it as they go and stop at its flag, so that a caller who stops waiting (a time limit) still
has what was found. Their patterns come compiled from :mod:`bot.tools.patterns` (linear time).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

from bot.tools.base import ToolError
from bot.tools.patterns import Matcher
from bot.tools.sandbox import Workspace

MAX_READ_BYTES = 20 * 1024 * 1024
"""Larger files are refused by read_file and edit_file, and skipped by grep."""
MAX_OUTPUT_CHARS = 16_000
MAX_LINE_CHARS = 2_000
MAX_LIST_ENTRIES = 500
SNIFF_BYTES = 8192
SKIP_DIRS = frozenset({".git"})
"""Listed, never descended into."""


def open_text(ws: Workspace, path: str, target: Path) -> bytes:
    """The bytes of a text file; a ToolError for what is missing, binary, too large, hard-linked
    or not really in the workspace."""
    fd = ws.open_file(path, target)
    try:
        info = os.fstat(fd)
        if info.st_size > MAX_READ_BYTES:
            raise ToolError(
                f"{path!r} is too large ({info.st_size} bytes, limit {MAX_READ_BYTES}); "
                "use grep, or run_command with head/tail"
            )
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(MAX_READ_BYTES + 1)
    finally:
        os.close(fd)
    if b"\x00" in data[:SNIFF_BYTES]:
        raise ToolError(f"{path!r} is a binary file ({len(data)} bytes)")
    return data


def _lines(text: str) -> list[str]:
    """The lines of ``text`` as an editor counts them (only \\n ends a line)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def read(ws: Workspace, path: str, offset: int, limit: int) -> str:
    lines = _lines(open_text(ws, path, ws.resolve(path)).decode(errors="replace"))
    if not lines:
        return f"{path} is empty."
    if offset >= len(lines):
        return f"{path} has only {len(lines)} lines."
    out: list[str] = []
    size = 0
    end = min(len(lines), offset + limit)
    for number in range(offset, end):
        line = lines[number]
        if len(line) > MAX_LINE_CHARS:
            line = f"{line[:MAX_LINE_CHARS]} [... line cut at {MAX_LINE_CHARS} characters]"
        size += len(line) + 8
        if size > MAX_OUTPUT_CHARS and out:
            end = number
            break
        out.append(f"{number + 1:>6}\t{line}")
    if end < len(lines):
        out.append(f"[{len(lines) - end} more lines; continue with offset={end}]")
    return "\n".join(out)


def write(ws: Workspace, path: str, content: str) -> str:
    target = ws.resolve_for_write(path)
    data = content.encode()
    try:
        ws.make_parents(target)
    except OSError as exc:
        raise ToolError(f"{path!r}: {exc.strerror}") from None
    _write_bytes(ws, path, target, data)
    return f"Wrote {len(data)} bytes to {ws.relative(target)}."


def _write_bytes(ws: Workspace, path: str, target: Path, data: bytes) -> None:
    """Replace the content of the checked file at ``target`` (created if missing)."""
    fd = ws.open_file(path, target, write=True)
    try:
        with os.fdopen(fd, "wb", closefd=False) as file:
            file.truncate(0)
            file.write(data)
    except OSError as exc:
        raise ToolError(f"{path!r}: {exc.strerror}") from None
    finally:
        os.close(fd)


def edit(ws: Workspace, path: str, old: str, new: str, count: int) -> str:
    target = ws.resolve_for_write(path)
    try:
        text = open_text(ws, path, target).decode()
    except UnicodeDecodeError:
        raise ToolError(f"{path!r} is not UTF-8 text; use write_file to replace it") from None
    found = text.count(old)
    if found == 0:
        raise ToolError(f"`old` was not found in {path!r}; read the file and copy the text exactly")
    if found > count:
        raise ToolError(
            f"`old` was found {found} times in {path!r} (count={count}); include more "
            f"surrounding text to make it unique, or set count={found} to replace them all"
        )
    _write_bytes(ws, path, target, text.replace(old, new, count).encode())
    return f"Replaced {found} occurrence{'s' if found > 1 else ''} in {ws.relative(target)}."


def _start(ws: Workspace, path: str) -> Path:
    start = ws.resolve(path)
    if not start.exists():
        raise ToolError(f"{path!r} does not exist")
    return start


def _walk(start: Path) -> Iterator[Path]:
    """Every path under ``start`` (or ``start`` itself if a file), without following symlinks."""
    if not start.is_dir():
        yield start
        return
    for here, dirs, files in os.walk(start):
        dirs.sort()
        for name in sorted(dirs + files):
            yield Path(here, name)
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]


def _entry(ws: Workspace, item: Path) -> str:
    name = ws.relative(item) if item != ws.root else "."
    if item.is_symlink():
        return f"{name} -> {os.readlink(item)}"
    if item.is_dir():
        return f"{name}/"
    return f"{name} ({item.lstat().st_size} bytes)"


class Search:
    """What a listing or search has found so far, and the flag that stops it early."""

    def __init__(self) -> None:
        self.found: list[str] = []
        self.files = 0
        """Files searched (grep) or entries looked at (listing)."""
        self.stop = threading.Event()

    def stopped(self, seconds: float) -> str:
        """What was found when the caller stopped waiting after ``seconds``, with a note."""
        found = list(self.found)
        note = (
            f"[stopped after {seconds:g} s, {self.files} files looked at: what was found so "
            "far is above; narrow the path or the pattern]"
        )
        return "\n".join([*found, note])


def listing(ws: Workspace, path: str, pattern: str, glob: Matcher, search: Search) -> str:
    entries = search.found
    for item in _walk(_start(ws, path)):
        if search.stop.is_set():
            break
        search.files += 1
        if not glob.fullmatch(item.name):
            continue
        if len(entries) == MAX_LIST_ENTRIES:
            entries.append(f"[listing stopped at {MAX_LIST_ENTRIES} entries; narrow it down]")
            break
        entries.append(_entry(ws, item))
    return "\n".join(entries) or f"Nothing under {path!r} matches {pattern!r}."


def grep(
    ws: Workspace, path: str, pattern: str, regex: Matcher, max_results: int, search: Search
) -> str:
    results = search.found
    size = 0
    skipped = 0
    for item in _walk(_start(ws, path)):
        if search.stop.is_set():
            break
        if item.is_symlink() or not item.is_file():
            continue
        name = ws.relative(item)
        try:
            text = open_text(ws, name, item).decode(errors="replace")
        except ToolError:
            skipped += 1
            continue
        search.files += 1
        for number, line in enumerate(_lines(text), 1):
            if search.stop.is_set():
                break
            if not regex.search(line):
                continue
            if len(results) == max_results or size > MAX_OUTPUT_CHARS:
                results.append(f"[stopped after {len(results)} matches; narrow the search]")
                return "\n".join(results)
            results.append(f"{name}:{number}: {line[:300]}")
            size += len(results[-1]) + 1
    note = f"\n[{skipped} binary, unreadable or oversized files skipped]" if skipped else ""
    return ("\n".join(results) or f"No matches for {pattern!r} in {path!r}.") + note
