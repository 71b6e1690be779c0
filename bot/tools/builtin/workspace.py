"""Workspace tools: each thread gets its own directory to run commands and edit files in.

The file tools only reach inside the thread's workspace and need no approval by default;
``run_command`` can do anything its user may, so a person approves it.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
import signal
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

from pydantic import Field

from bot.tools import sandbox
from bot.tools.base import Tool, ToolContext, ToolError, tool
from bot.tools.sandbox import CommandResult, Workspace

MAX_TIMEOUT_S = 600
MAX_READ_BYTES = 20 * 1024 * 1024
"""Larger files are refused by read_file and edit_file, and skipped by grep."""
MAX_OUTPUT_CHARS = 16_000
MAX_LINE_CHARS = 2_000
MAX_WRITE_CHARS = 1_000_000
MAX_LIST_ENTRIES = 500
MAX_GREP_RESULTS = 1_000
SNIFF_BYTES = 8192
SKIP_DIRS = frozenset({".git"})
"""Listed, never descended into."""


def workspace_tools(root: Path) -> list[Tool]:
    """The workspace tools, each thread working in its own directory under ``root``."""

    def workspace(ctx: ToolContext) -> Workspace:
        return Workspace.for_thread(root, ctx.thread_key)

    async def run_command(
        ctx: ToolContext,
        command: Annotated[str, Field(min_length=1, max_length=20_000)],
        timeout_s: Annotated[int, Field(ge=1, le=MAX_TIMEOUT_S)] = 60,
    ) -> str:
        """Run a shell command (/bin/sh -c) in the thread's workspace directory.
        stdout and stderr are returned together (long output keeps only its start and end),
        with the exit code. There is no input; background processes are stopped at the end.

        Args:
            command: The shell command line.
            timeout_s: Seconds before the command and its children are killed (1-600).
        """
        ws = workspace(ctx)
        env = sandbox.clean_environment(ws.root)
        result = await sandbox.run_command(command, ws.root, timeout_s, env)
        return _describe(result, timeout_s)

    async def read_file(
        ctx: ToolContext,
        path: str,
        offset: Annotated[int, Field(ge=0)] = 0,
        limit: Annotated[int, Field(ge=1, le=5000)] = 2000,
    ) -> str:
        """Read a text file of the workspace. Lines come numbered ("   12<TAB>text"); the
        numbers are not part of the file.

        Args:
            path: Path relative to the workspace.
            offset: How many lines to skip from the start.
            limit: How many lines to return at most.
        """
        return await asyncio.to_thread(_read, workspace(ctx), path, offset, limit)

    async def write_file(
        ctx: ToolContext,
        path: str,
        content: Annotated[str, Field(max_length=MAX_WRITE_CHARS)],
    ) -> str:
        """Create or overwrite a file in the workspace (parent directories are created).

        Args:
            path: Path relative to the workspace.
            content: The whole new content of the file.
        """
        return await asyncio.to_thread(_write, workspace(ctx), path, content)

    async def edit_file(
        ctx: ToolContext,
        path: str,
        old: Annotated[str, Field(min_length=1)],
        new: str,
        count: Annotated[int, Field(ge=1)] = 1,
    ) -> str:
        """Replace exact text in a workspace file. Fails if `old` is not found, or is found
        more than `count` times (then add surrounding text to make it unique).

        Args:
            path: Path relative to the workspace.
            old: The exact text to replace, including whitespace; no line numbers.
            new: The replacement text.
            count: How many occurrences to replace at most.
        """
        return await asyncio.to_thread(_edit, workspace(ctx), path, old, new, count)

    async def list_files(ctx: ToolContext, path: str = ".", pattern: str = "*") -> str:
        """List files and directories under a workspace path, recursively (up to 500).

        Args:
            path: Directory relative to the workspace.
            pattern: Glob matched against each name, e.g. "*.py".
        """
        return await asyncio.to_thread(_list, workspace(ctx), path, pattern)

    async def grep(
        ctx: ToolContext,
        pattern: Annotated[str, Field(min_length=1, max_length=1000)],
        path: str = ".",
        max_results: Annotated[int, Field(ge=1, le=MAX_GREP_RESULTS)] = 100,
    ) -> str:
        """Search workspace text files for a Python regular expression; returns
        "path:line: text" for each matching line. Binary files are skipped.

        Args:
            pattern: The regular expression.
            path: File or directory relative to the workspace.
            max_results: How many matching lines to return at most.
        """
        return await asyncio.to_thread(_grep, workspace(ctx), path, pattern, max_results)

    return [
        tool(run_command, side_effects=True, approval="ask"),
        tool(read_file),
        tool(write_file, side_effects=True, approval="never"),
        tool(edit_file, side_effects=True, approval="never"),
        tool(list_files),
        tool(grep),
    ]


def _describe(result: CommandResult, timeout_s: int) -> str:
    output = result.output.rstrip("\n") or "(no output)"
    if result.timed_out:
        status = f"timed out after {timeout_s} s: the command and its processes were killed"
    elif result.exit_code is not None and result.exit_code < 0:
        status = f"killed by signal {-result.exit_code} ({signal.strsignal(-result.exit_code)})"
    else:
        status = f"exit code {result.exit_code}"
    return f"{output}\n[{status}]"


def _open_text(path: str, target: Path) -> bytes:
    """The bytes of a text file; a ToolError for what is missing, binary or too large."""
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ToolError(f"{path!r} does not exist") from None
    except OSError as exc:
        raise ToolError(f"{path!r}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{path!r} is a directory; use list_files")
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{path!r} is not a regular file")
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


def _read(ws: Workspace, path: str, offset: int, limit: int) -> str:
    lines = _lines(_open_text(path, ws.resolve(path)).decode(errors="replace"))
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


def _write(ws: Workspace, path: str, content: str) -> str:
    target = ws.resolve_for_write(path)
    data = content.encode()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_bytes(target, data)
    except OSError as exc:
        raise ToolError(f"{path!r}: {exc.strerror}") from None
    return f"Wrote {len(data)} bytes to {ws.relative(target)}."


def _write_bytes(target: Path, data: bytes) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    with os.fdopen(os.open(target, flags, 0o644), "wb") as file:
        file.write(data)


def _edit(ws: Workspace, path: str, old: str, new: str, count: int) -> str:
    target = ws.resolve_for_write(path)
    try:
        text = _open_text(path, target).decode()
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
    try:
        _write_bytes(target, text.replace(old, new, count).encode())
    except OSError as exc:
        raise ToolError(f"{path!r}: {exc.strerror}") from None
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


def _list(ws: Workspace, path: str, pattern: str) -> str:
    entries: list[str] = []
    for item in _walk(_start(ws, path)):
        if not fnmatch.fnmatch(item.name, pattern):
            continue
        if len(entries) == MAX_LIST_ENTRIES:
            entries.append(f"[listing stopped at {MAX_LIST_ENTRIES} entries; narrow it down]")
            break
        entries.append(_entry(ws, item))
    return "\n".join(entries) or f"Nothing under {path!r} matches {pattern!r}."


def _grep(ws: Workspace, path: str, pattern: str, max_results: int) -> str:
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None
    results: list[str] = []
    size = 0
    skipped = 0
    for item in _walk(_start(ws, path)):
        if item.is_symlink() or not item.is_file():
            continue
        name = ws.relative(item)
        try:
            text = _open_text(name, item).decode(errors="replace")
        except ToolError:
            skipped += 1
            continue
        for number, line in enumerate(_lines(text), 1):
            if not regex.search(line):
                continue
            if len(results) == max_results or size > MAX_OUTPUT_CHARS:
                results.append(f"[stopped after {len(results)} matches; narrow the search]")
                return "\n".join(results)
            results.append(f"{name}:{number}: {line[:300]}")
            size += len(results[-1]) + 1
    note = f"\n[{skipped} binary, unreadable or oversized files skipped]" if skipped else ""
    return ("\n".join(results) or f"No matches for {pattern!r} in {path!r}.") + note
