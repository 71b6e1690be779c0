"""A thread's workspace directory: safe path resolution and a bounded process runner.

Every path a model gives is resolved inside the workspace, following symlinks, and refused
when it leaves it. Commands run through ``/bin/sh -c`` in their own process group, with the
secrets removed from the environment; the whole group is killed on timeout, on cancellation
and when the shell exits, and only the head and tail of their output are kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import signal
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bot.tools.base import ToolError

KILL_GRACE_S = 1.0
"""How long a process group has between SIGTERM and SIGKILL after a timeout."""
DRAIN_GRACE_S = 1.0
"""How long to keep reading output held open by a process that left the group."""
OUTPUT_HEAD = 8 * 1024
OUTPUT_TAIL = 8 * 1024

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SECRET_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET")
_SECRET_PREFIXES = ("SLACK_", "DISCORD_")
_SECRET_NAMES = frozenset({"OPENAI_BASE_URL"})


def directory_name(thread_key: str) -> str:
    """A readable, filesystem-safe and collision-free directory name for a thread key."""
    digest = hashlib.sha256(thread_key.encode()).hexdigest()[:12]
    readable = _UNSAFE.sub("_", thread_key).strip("._-")[:80]
    return f"{readable}-{digest}" if readable else digest


@dataclass(frozen=True, slots=True)
class Workspace:
    """One thread's directory; ``root`` is absolute and has no symlinks."""

    root: Path

    @classmethod
    def for_thread(cls, base: Path, thread_key: str) -> Workspace:
        """The thread's workspace under ``base``, created on first use."""
        directory = base / directory_name(thread_key)
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        return cls(directory.resolve(strict=True))

    def resolve(self, path: str) -> Path:
        """The real path of ``path`` (which need not exist), refused if it leaves the workspace."""
        pure = self._pure(path)
        return self._inside(path, self.root / pure)

    def resolve_for_write(self, path: str) -> Path:
        """Where writing ``path`` lands: inside the workspace, a file name, not a symlink."""
        pure = self._pure(path)
        self._inside(path, self.root / pure)
        if pure.name in ("", ".", ".."):
            raise ToolError(f"{path!r} does not name a file")
        parent = self._inside(path, self.root / pure.parent)
        target = parent / pure.name
        if target.is_symlink():
            raise ToolError(f"{path!r} is a symlink; refusing to write through it")
        if target.is_dir():
            raise ToolError(f"{path!r} is a directory")
        return target

    def relative(self, path: Path) -> str:
        """``path`` as the model should see it: relative to the workspace, with slashes."""
        relative = path.relative_to(self.root).as_posix()
        return relative if relative != "." else "."

    def _pure(self, path: str) -> PurePosixPath:
        if "\x00" in path:
            raise ToolError(f"{path!r}: a path cannot contain a NUL character")
        pure = PurePosixPath(path or ".")
        if pure.is_absolute():
            raise ToolError(f"{path!r} is absolute; give a path relative to the workspace")
        return pure

    def _inside(self, path: str, candidate: Path) -> Path:
        try:
            resolved = candidate.resolve(strict=False)
        except (OSError, RuntimeError) as exc:
            raise ToolError(f"{path!r} cannot be resolved: {exc}") from None
        if not resolved.is_relative_to(self.root):
            raise ToolError(f"{path!r} is outside the workspace")
        return resolved


def clean_environment(workspace: Path, source: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a command: ``source`` without secrets, HOME at the workspace."""
    env = {
        name: value
        for name, value in (os.environ if source is None else source).items()
        if not _is_secret(name) and name != "OLDPWD"
    }
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.setdefault("LANG", "C.UTF-8")
    env.update(HOME=str(workspace), PWD=str(workspace), TERM="dumb", PAGER="cat")
    return env


def _is_secret(name: str) -> bool:
    upper = name.upper()
    return (
        upper.endswith(_SECRET_SUFFIXES)
        or upper.startswith(_SECRET_PREFIXES)
        or "PASSWORD" in upper
        or upper in _SECRET_NAMES
    )


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
    """The shell's exit status; negative when a signal ended it, None if it never ended."""
    timed_out: bool
    output: str
    """stdout and stderr together, the middle cut when long."""
    total_bytes: int
    cut_bytes: int


async def run_command(
    command: str, cwd: Path, timeout_s: float, env: dict[str, str]
) -> CommandResult:
    """Run ``command`` with ``/bin/sh -c`` in ``cwd``; kill its process group when done.

    If the calling task is cancelled, the group is killed before the cancellation propagates.
    """
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            command,
            cwd=cwd,
            env=env,
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
    """SIGTERM the group, then SIGKILL it if the shell outlives the grace period."""
    _kill_group(process.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), KILL_GRACE_S)
    except TimeoutError:
        _kill_group(process.pid, signal.SIGKILL)
        await process.wait()


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
