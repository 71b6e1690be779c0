"""The bounded process runner, as the unsandboxed mode (THREADLINE_SANDBOX=none) uses it:
output capped, and no process of the command outlives its call in its process group."""

from __future__ import annotations

import asyncio
import os
import signal
import tracemalloc
from pathlib import Path

import pytest

from bot.tools import process
from bot.tools.commands import HostRunner, clean_environment
from bot.tools.process import OutputCapture
from bot.tools.sandbox import Workspace
from tests.sandboxing import exited, fifo, running


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace.for_thread(tmp_path / "root", "slack:T1:C1:1700000000.0001")


async def run(ws: Workspace, command: str, timeout_s: float = 10) -> process.CommandResult:
    return await HostRunner().run(command, ws, timeout_s, network=False)


def test_environment_loses_its_secrets(tmp_path: Path) -> None:
    source = {
        "PATH": "/bin",
        "LANG": "en_US.UTF-8",
        "KEEP_ME": "1",
        "OPENAI_API_KEY": "s",
        "GITHUB_TOKEN": "s",
        "SLACK_SIGNING_SECRET": "s",
        "SLACK_API_URL": "s",
        "DISCORD_API_BASE": "s",
        "OPENAI_BASE_URL": "s",
        "DB_PASSWORD_FILE": "s",
        "lower_token": "s",
        "HOME": "/root",
    }
    env = clean_environment(tmp_path, source)
    assert env == {
        "PATH": "/bin",
        "LANG": "en_US.UTF-8",
        "KEEP_ME": "1",
        "HOME": str(tmp_path),
        "PWD": str(tmp_path),
        "TERM": "dumb",
        "PAGER": "cat",
    }
    assert clean_environment(tmp_path, {})["PATH"]


def test_capture_keeps_head_and_tail() -> None:
    capture = OutputCapture(head=4, tail=4)
    for chunk in (b"ab", b"cdef", b"ghij", b"kl"):
        capture.data_received(chunk)
    assert (capture.total, capture.cut) == (12, 4)
    assert capture.text() == "abcd\n[... 4 bytes of output cut ...]\nijkl"
    short = OutputCapture(head=4, tail=4)
    short.data_received(b"abcdef")
    assert short.text() == "abcdef"


async def test_command_output_and_exit_code(ws: Workspace) -> None:
    result = await run(ws, "pwd; echo out; echo err >&2; exit 7")
    assert result.output == f"{ws.root}\nout\nerr\n"
    assert (result.exit_code, result.timed_out) == (7, False)


async def test_stdin_is_empty(ws: Workspace) -> None:
    result = await run(ws, "cat; echo done")
    assert result.output == "done\n"


async def test_timeout_kills_the_whole_group(ws: Workspace) -> None:
    async with fifo(ws.root / "ready") as words:
        command = "sleep 1000 & echo $! > ready; wait"
        task = asyncio.create_task(run(ws, command, timeout_s=0.5))
        [child] = map(int, await words())
        result = await task
    assert result.timed_out
    assert result.exit_code == -signal.SIGTERM
    await exited(child, within=2)


async def test_a_group_ignoring_sigterm_is_killed(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process, "KILL_GRACE_S", 0.2)
    async with fifo(ws.root / "ready") as words:
        command = "trap '' TERM; sleep 1000 & echo $! > ready; wait"
        task = asyncio.create_task(run(ws, command, timeout_s=0.3))
        [child] = map(int, await words())
        result = await task
    assert result.timed_out and result.exit_code == -signal.SIGKILL
    await exited(child, within=2)


async def test_background_processes_end_with_the_command(ws: Workspace) -> None:
    async with fifo(ws.root / "ready") as words:
        result = await run(ws, "sleep 1000 & echo $! > ready; echo started")
        [child] = map(int, await words())
    assert (result.output, result.exit_code) == ("started\n", 0)
    await exited(child, within=2)


async def test_a_process_leaving_the_group_does_not_hang_the_call(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process, "DRAIN_GRACE_S", 0.2)
    command = (
        "setsid sh -c 'echo $$ > escaped.pid; exec sleep 1000' & "
        "while [ ! -s escaped.pid ]; do :; done; echo left"
    )
    result = await run(ws, command)
    assert (result.output, result.exit_code) == ("left\n", 0)
    escaped = int((ws.root / "escaped.pid").read_text())
    assert running(escaped)
    os.kill(escaped, signal.SIGKILL)
    await exited(escaped, within=2)


async def test_output_flood_is_capped_in_bounded_memory(ws: Workspace) -> None:
    tracemalloc.start()
    try:
        result = await run(ws, "yes | head -c 50000000; echo; echo last line")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    size = 50_000_000 + len("\nlast line\n")
    assert result.total_bytes == size
    assert result.cut_bytes == size - process.OUTPUT_HEAD - process.OUTPUT_TAIL
    assert f"[... {result.cut_bytes} bytes of output cut ...]" in result.output
    assert result.output.startswith("y\ny\n") and result.output.endswith("y\n\nlast line\n")
    assert len(result.output) < 17_000
    assert peak < 4 * 1024 * 1024


async def test_cancellation_kills_the_group_before_it_propagates(ws: Workspace) -> None:
    async with fifo(ws.root / "ready") as words:
        command = "sleep 1000 & echo $$ $! > ready; wait"
        task = asyncio.create_task(run(ws, command, timeout_s=60))
        shell, child = map(int, await words())
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert not running(shell)
    await exited(child, within=2)


async def test_a_missing_workspace_is_an_error_not_a_leak(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await process.run_process(["true"], tmp_path / "gone", 5, {})
