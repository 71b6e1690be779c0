"""A stdio MCP server's process: started in its own process group with a minimal environment,
its stdout read one message a line (bounded), its stderr logged line by line under the
server's name, and stopped gently (stdin closed), then firmly (the whole group signalled).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Awaitable, Mapping
from pathlib import Path

from bot.errors import McpUnavailable

INHERITED = (
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
)
"""All a stdio server gets from the bot's environment (plus its own ``env``): never a key."""
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_LOGGED_CHARS = 2000
GRACE_S = 2.0


def server_environment(environ: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """What a stdio server's process is started with."""
    base = {k: environ[k] for k in INHERITED if k in environ}
    return base | dict(extra)


def server_log(name: str) -> logging.Logger:
    """The logger a server's own output goes to (``threadline.mcp.<name>``)."""
    return logging.getLogger(f"threadline.mcp.{name}")


class MessageTooLong(Exception):
    pass


class ServerProcess:
    def __init__(self, name: str, proc: asyncio.subprocess.Process, limit: int) -> None:
        self.name = name
        self._proc = proc
        self._limit = limit
        self._log = server_log(name)
        self._stderr = asyncio.get_running_loop().create_task(
            self._pump_stderr(), name=f"mcp-stderr:{name}"
        )

    @classmethod
    async def spawn(
        cls,
        name: str,
        command: str,
        args: list[str],
        env: Mapping[str, str],
        cwd: Path | None,
        limit: int = MAX_MESSAGE_BYTES,
    ) -> ServerProcess:
        try:
            proc = await asyncio.create_subprocess_exec(
                command,
                *args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=dict(env),
                cwd=cwd,
                limit=limit,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            missing = (
                command
                if cwd is None or exc.filename == command
                else f"{command} (or the directory {cwd})"
            )
            raise McpUnavailable(f"{name}: command not found: {missing}") from None
        except (PermissionError, NotADirectoryError) as exc:
            raise McpUnavailable(f"{name}: cannot start {command}: {exc.strerror}") from None
        except OSError as exc:
            raise McpUnavailable(f"{name}: cannot start {command}: {exc}") from None
        return cls(name, proc, limit)

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    async def read_line(self) -> bytes | None:
        """The next line from stdout; ``None`` at its end; :class:`MessageTooLong` when a line
        passes the limit."""
        assert self._proc.stdout is not None
        try:
            return await self._proc.stdout.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial or None
        except asyncio.LimitOverrunError:
            raise MessageTooLong(
                f"sent a message longer than {self._limit / 2**20:g} MiB"
            ) from None

    async def write(self, data: bytes) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(data)
        await self._proc.stdin.drain()

    async def stop(self) -> int | None:
        """End the process (and anything it started); returns its exit code. Call it once
        nothing else reads stdout: what the server still writes is read and dropped, so that
        a server blocked on a full pipe can see its input close."""
        stdin = self._proc.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
        drain = asyncio.get_running_loop().create_task(self._drain_stdout())
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None and self._proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self._proc.pid, sig)
            if await _within(GRACE_S, self._proc.wait()):
                break
        else:
            self._log.warning(
                "[%s] process %d did not exit after SIGKILL", self.name, self._proc.pid
            )
        for pump in (drain, self._stderr):  # output still in the pipes (its last words are logged)
            if not await _within(GRACE_S, asyncio.shield(pump)):
                pump.cancel()
        await asyncio.gather(drain, self._stderr, return_exceptions=True)
        transport = getattr(self._proc, "_transport", None)  # pipes a descendant still holds
        if transport is not None:
            transport.close()
        return self._proc.returncode

    async def _drain_stdout(self) -> None:
        stream = self._proc.stdout
        assert stream is not None
        while await stream.read(1 << 16):
            pass

    async def _pump_stderr(self) -> None:
        stream = self._proc.stderr
        assert stream is not None
        while True:
            try:
                line = await stream.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                line = exc.partial
            except asyncio.LimitOverrunError as exc:
                line = await stream.readexactly(exc.consumed)
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip()
            if len(text) > MAX_LOGGED_CHARS:
                text = (
                    f"{text[:MAX_LOGGED_CHARS]}… [{len(text) - MAX_LOGGED_CHARS} more characters]"
                )
            if text:
                self._log.info("[%s] %s", self.name, text)


async def _within(seconds: float, work: Awaitable[object]) -> bool:
    """Whether ``work`` finished within ``seconds`` (it is cancelled otherwise)."""
    try:
        async with asyncio.timeout(seconds):
            await work
    except TimeoutError:
        return False
    return True
