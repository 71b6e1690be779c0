"""Workspace tools: each thread gets its own directory to run commands and edit files in.

The file tools only reach inside the thread's workspace and need no approval by default;
``run_command`` runs through a :class:`CommandRunner` (the sandbox, normally), and a person
approves it. Without a runner there is no ``run_command``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

from pydantic import Field

from bot.tools import patterns
from bot.tools.base import Tool, ToolContext, tool
from bot.tools.builtin import files
from bot.tools.commands import CommandRunner
from bot.tools.process import CommandResult
from bot.tools.sandbox import Workspace

MAX_TIMEOUT_S = 600
MAX_WRITE_CHARS = 1_000_000
MAX_GREP_RESULTS = 1_000
SEARCH_SECONDS = 20.0
"""The longest ``grep`` or ``list_files`` works; then it answers with what it found."""


def workspace_tools(
    root: Path,
    runner: CommandRunner | None,
    network: Callable[[str], bool] = lambda key: False,
    search_s: float = SEARCH_SECONDS,
) -> list[Tool]:
    """The workspace tools, each thread working in its own directory under ``root``;
    ``run_command`` when there is a ``runner``, with the network where ``network(thread key)``
    allows it. ``grep`` and ``list_files`` answer within ``search_s`` seconds."""
    owner = runner.owner if runner is not None else None

    def workspace(ctx: ToolContext) -> Workspace:
        return Workspace.for_thread(root, ctx.thread_key, owner)

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
        assert runner is not None  # not offered without one
        ws = workspace(ctx)
        result = await runner.run(command, ws, timeout_s, network=network(ctx.thread_key))
        return describe_result(result, timeout_s)

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
        return await asyncio.to_thread(files.read, workspace(ctx), path, offset, limit)

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
        return await asyncio.to_thread(files.write, workspace(ctx), path, content)

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
        return await asyncio.to_thread(files.edit, workspace(ctx), path, old, new, count)

    async def list_files(
        ctx: ToolContext,
        path: str = ".",
        pattern: Annotated[str, Field(min_length=1, max_length=1000)] = "*",
    ) -> str:
        """List files and directories under a workspace path, recursively (up to 500).

        Args:
            path: Directory relative to the workspace.
            pattern: Glob matched against each name, e.g. "*.py".
        """
        glob = patterns.glob(pattern)
        ws = workspace(ctx)
        return await within(search_s, lambda found: files.listing(ws, path, pattern, glob, found))

    async def grep(
        ctx: ToolContext,
        pattern: Annotated[str, Field(min_length=1, max_length=1000)],
        path: str = ".",
        max_results: Annotated[int, Field(ge=1, le=MAX_GREP_RESULTS)] = 100,
    ) -> str:
        """Search workspace text files for a regular expression (RE2 syntax: Python's, without
        backreferences or lookaround); returns "path:line: text" for each matching line.
        Binary files are skipped.

        Args:
            pattern: The regular expression.
            path: File or directory relative to the workspace.
            max_results: How many matching lines to return at most.
        """
        regex = patterns.regex(pattern)
        ws = workspace(ctx)
        return await within(
            search_s, lambda found: files.grep(ws, path, pattern, regex, max_results, found)
        )

    command_tools: list[Tool] = []
    if runner is not None:
        command = tool(run_command, side_effects=True, approval="ask", executes=True)
        if runner.note:
            command = dataclasses.replace(
                command, description=f"{command.description}\n{runner.note}"
            )
        command_tools.append(command)
    return [
        *command_tools,
        tool(read_file),
        tool(write_file, side_effects=True, approval="never"),
        tool(edit_file, side_effects=True, approval="never"),
        tool(list_files),
        tool(grep),
    ]


def describe_result(result: CommandResult, timeout_s: float) -> str:
    """A command's output and how it ended, as the model reads it."""
    output = result.output.rstrip("\n") or "(no output)"
    if result.timed_out:
        status = f"timed out after {timeout_s:g} s: the command and its processes were killed"
    elif result.exit_code is not None and result.exit_code < 0:
        status = f"killed by signal {-result.exit_code} ({signal.strsignal(-result.exit_code)})"
    elif result.exit_code is not None and 128 < result.exit_code < 128 + signal.NSIG:
        number = result.exit_code - 128
        status = (
            f"exit code {result.exit_code}, as when signal {number} "
            f"({signal.strsignal(number)}) ends a process"
        )
    else:
        status = f"exit code {result.exit_code}"
    return f"{output}\n[{status}]"


async def within(seconds: float, work: Callable[[files.Search], str]) -> str:
    """``work`` run in a worker thread; after ``seconds`` (or when the call is cancelled) it is
    told to stop and the answer is what it had found, with a note. The thread ends at its next
    check of the flag; nothing waits for it."""
    search = files.Search()
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(None, work, search)
    try:
        done, _ = await asyncio.wait({future}, timeout=seconds)
    finally:
        search.stop.set()
    if future in done:
        return future.result()
    future.add_done_callback(_collect)
    return search.stopped(seconds)


def _collect(future: asyncio.Future[str]) -> None:
    """Take the late result of work nobody waits for any more (an error in it is not logged as
    never retrieved)."""
    if not future.cancelled():
        future.exception()
