"""What tests of commands need: the sandbox (or a loud failure where it cannot work), and ways
to see which processes are still alive without sleeping blindly."""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from bot.tools import bwrap
from bot.tools.bwrap import BwrapRunner, Limits

NO_SANDBOX = "THREADLINE_TEST_NO_SANDBOX"
"""Set to 1 to skip the sandbox tests (with their reason) where bubblewrap cannot work."""
WAIT = 10.0


def sandbox_runner(limits: Limits | None = None) -> BwrapRunner:
    """The sandbox runner; without a working sandbox the test fails, or skips only when the
    operator set THREADLINE_TEST_NO_SANDBOX=1."""
    found = bwrap.probe()
    if not found.usable:
        message = f"the bubblewrap sandbox cannot run here: {found.detail}"
        if os.environ.get(NO_SANDBOX) == "1":
            pytest.skip(f"{message} ({NO_SANDBOX}=1)")
        pytest.fail(f"{message}. {bwrap.REMEDY}. ({NO_SANDBOX}=1 skips these tests.)")
    return BwrapRunner(found.executable, limits)


def marker() -> str:
    """A number no other process has in its command line: ``sleep 9999.<marker>`` carries it."""
    return str(uuid.uuid4().int % 10**12).zfill(12)


def processes_with(mark: str) -> list[int]:
    """Host pids of live (not zombie) processes whose command line contains ``mark``."""
    found: list[int] = []
    needle = mark.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "cmdline").read_bytes() and running(int(entry.name)):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


async def until(check: Callable[[], bool], within: float = WAIT) -> bool:
    """Poll ``check`` every 10 ms until it holds; False when ``within`` seconds pass first."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie has exited)."""
    try:
        fd = os.pidfd_open(pid)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        return not select.select([fd], [], [], 0)[0]
    finally:
        os.close(fd)


async def exited(pid: int, within: float = 5.0) -> None:
    """Wait for ``pid`` to exit: a pidfd becomes readable when its process ends."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    loop.add_reader(fd, done.set)
    try:
        async with asyncio.timeout(within):
            await done.wait()
    finally:
        loop.remove_reader(fd)
        os.close(fd)


@contextlib.asynccontextmanager
async def fifo(path: Path) -> AsyncIterator[Callable[[], Awaitable[list[str]]]]:
    """A named pipe a command writes a line of words to; yields a function reading one line.
    (Anyone may write to it: a sandboxed command runs as another user when the bot is root.)"""
    os.mkfifo(path, 0o666)
    os.chmod(path, 0o666)
    read_fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    keep_open = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # no EOF between writers
    reader = asyncio.StreamReader()
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", 0)
    )

    async def words() -> list[str]:
        async with asyncio.timeout(WAIT):
            return (await reader.readline()).decode().split()

    try:
        yield words
    finally:
        transport.close()
        os.close(keep_open)
