"""A bounded process runner: one program, its output capped, nothing of it left afterwards.

The program runs in its own process group with no input; stdout and stderr share one pipe of
which only the head and the tail are kept. On timeout the group gets SIGTERM, then SIGKILL after
a grace period; when the program ends, when the call is cancelled, and after a timeout, the
whole group is killed, so background processes end with the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

KILL_GRACE_S = 1.0
"""How long a process group has between SIGTERM and SIGKILL after a timeout."""
DRAIN_GRACE_S = 1.0
"""How long to keep reading output held open by a process that left the group."""
OUTPUT_HEAD = 8 * 1024
OUTPUT_TAIL = 8 * 1024


class OutputCapture(asyncio.Protocol):
    """Keeps the first ``head`` and the last ``tail`` bytes of a stream, counting the rest."""

    def __init__(self, head: int = OUTPUT_HEAD, tail: int = OUTPUT_TAIL) -> None:
        self._head_size = head
        self._tail_size = tail
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.closed = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_size - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data[-self._tail_size :]
            if len(self.tail) > self._tail_size:
                del self.tail[: len(self.tail) - self._tail_size]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()

    @property
    def cut(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def text(self) -> str:
        head = self.head.decode(errors="replace")
        if not self.tail:
            return head
        tail = self.tail.decode(errors="replace")
        if not self.cut:
            return head + tail
        return f"{head}\n[... {self.cut} bytes of output cut ...]\n{tail}"


@dataclass(frozen=True, slots=True)
class CommandResult:
    exit_code: int | None
    """The program's exit status; negative when a signal ended it, None if it never ended."""
    timed_out: bool
    output: str
    """stdout and stderr together, the middle cut when long."""
    total_bytes: int
    cut_bytes: int


async def run_process(
    argv: Sequence[str], cwd: Path, timeout_s: float, env: Mapping[str, str]
) -> CommandResult:
    """Run ``argv`` in ``cwd``; kill its process group when done.

    If the calling task is cancelled, the group is killed before the cancellation propagates.
    """
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=write_fd,
            stderr=write_fd,
            start_new_session=True,
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    capture = OutputCapture()
    transport: asyncio.BaseTransport | None = None
    timed_out = False
    try:
        transport, _ = await loop.connect_read_pipe(lambda: capture, os.fdopen(read_fd, "rb", 0))
        try:
            await asyncio.wait_for(process.wait(), timeout_s)
        except TimeoutError:
            timed_out = True
            await _terminate(process)
        _kill_group(process.pid, signal.SIGKILL)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(capture.closed.wait(), DRAIN_GRACE_S)
    except BaseException:
        _kill_group(process.pid, signal.SIGKILL)
        await asyncio.shield(process.wait())
        raise
    finally:
        if transport is not None:
            transport.close()
    return CommandResult(
        exit_code=process.returncode,
        timed_out=timed_out,
        output=capture.text(),
        total_bytes=capture.total,
        cut_bytes=capture.cut,
    )


async def _terminate(process: asyncio.subprocess.Process) -> None:
    """SIGTERM the group, then SIGKILL it if the program outlives the grace period."""
    _kill_group(process.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), KILL_GRACE_S)
    except TimeoutError:
        _kill_group(process.pid, signal.SIGKILL)
        await process.wait()


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
