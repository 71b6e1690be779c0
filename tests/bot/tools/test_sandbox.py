"""The sandbox: workspace paths stay inside, and commands never outlive their call."""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from bot.tools import sandbox
from bot.tools.base import ToolError
from bot.tools.sandbox import OutputCapture, Workspace, clean_environment, directory_name


def running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie has exited)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
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
async def fifo(path: Path) -> AsyncIterator[Callable[[], Awaitable[list[int]]]]:
    """A named pipe a command writes pids to; yields a function reading one line of them."""
    os.mkfifo(path)
    read_fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    keep_open = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # no EOF between writers
    reader = asyncio.StreamReader()
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", 0)
    )

    async def pids() -> list[int]:
        async with asyncio.timeout(5):
            return [int(word) for word in (await reader.readline()).split()]

    try:
        yield pids
    finally:
        transport.close()
        os.close(keep_open)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace.for_thread(tmp_path / "root", "slack:T1:C1:1700000000.0001")


async def run(ws: Workspace, command: str, timeout_s: float = 10) -> sandbox.CommandResult:
    return await sandbox.run_command(command, ws.root, timeout_s, clean_environment(ws.root))


# -- directory names and paths -------------------------------------------------------------


def test_directory_names_are_readable_safe_and_distinct() -> None:
    name = directory_name("slack:T1:C1:1700000000.0001")
    assert name.startswith("slack_T1_C1_1700000000.0001-")
    odd = ["a:b", "a_b", "a/b", "../..", "", ".", "playground:ä ö", "x" * 1000, "a\x00b"]
    names = [directory_name(key) for key in odd]
    assert len(set(names)) == len(odd)
    for item in names:
        assert item not in ("", ".", "..")
        assert "/" not in item and "\x00" not in item and not item.startswith(".")
        assert len(item.encode()) <= 100


def test_workspace_is_created_inside_the_root(tmp_path: Path) -> None:
    made = Workspace.for_thread(tmp_path / "a" / "b", "../../../etc")
    assert made.root.is_dir()
    assert made.root.parent == (tmp_path / "a" / "b").resolve()


def test_paths_resolve_inside_the_workspace(ws: Workspace) -> None:
    (ws.root / "src").mkdir()
    assert ws.resolve("src/a.py") == ws.root / "src" / "a.py"
    assert ws.resolve("src/../b.txt") == ws.root / "b.txt"
    assert ws.resolve(".") == ws.root
    assert ws.resolve("") == ws.root
    assert ws.resolve_for_write("new/deep/file.txt") == ws.root / "new" / "deep" / "file.txt"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../x", "outside the workspace"),
        ("a/../../x", "outside the workspace"),
        ("/etc/passwd", "absolute"),
        ("etc/passwd", "outside the workspace"),
        ("passwd", "outside the workspace"),
        ("etc/../../x", "outside the workspace"),
        ("nul\x00byte", "NUL"),
    ],
)
def test_escapes_are_refused(ws: Workspace, path: str, reason: str) -> None:
    (ws.root / "etc").symlink_to("/etc")
    (ws.root / "passwd").symlink_to("/etc/passwd")
    for resolve in (ws.resolve, ws.resolve_for_write):
        with pytest.raises(ToolError, match=reason) as caught:
            resolve(path)
        assert repr(path) in str(caught.value)


def test_writes_are_refused_through_symlinks_and_dangling_links(ws: Workspace) -> None:
    (ws.root / "inside.txt").write_text("x")
    (ws.root / "link.txt").symlink_to("inside.txt")
    (ws.root / "dangling").symlink_to("/nonexistent-dir/file")
    (ws.root / "loop").symlink_to("loop")
    with pytest.raises(ToolError, match="symlink"):
        ws.resolve_for_write("link.txt")
    assert ws.resolve("link.txt") == ws.root / "inside.txt"
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.resolve_for_write("dangling")
    with pytest.raises(ToolError, match="cannot be resolved"):
        ws.resolve("loop")
    with pytest.raises(ToolError, match="does not name a file"):
        ws.resolve_for_write("src/..")


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


# -- the process runner --------------------------------------------------------------------


async def test_command_output_and_exit_code(ws: Workspace) -> None:
    result = await run(ws, "pwd; echo out; echo err >&2; exit 7")
    assert result.output == f"{ws.root}\nout\nerr\n"
    assert (result.exit_code, result.timed_out) == (7, False)


async def test_stdin_is_empty(ws: Workspace) -> None:
    result = await run(ws, "cat; echo done")
    assert result.output == "done\n"


async def test_timeout_kills_the_whole_group(ws: Workspace) -> None:
    async with fifo(ws.root / "ready") as pids:
        command = "sleep 1000 & echo $! > ready; wait"
        task = asyncio.create_task(run(ws, command, timeout_s=0.5))
        [child] = await pids()
        result = await task
    assert result.timed_out
    assert result.exit_code == -signal.SIGTERM
    await exited(child, within=2)


async def test_a_group_ignoring_sigterm_is_killed(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "KILL_GRACE_S", 0.2)
    async with fifo(ws.root / "ready") as pids:
        command = "trap '' TERM; sleep 1000 & echo $! > ready; wait"
        task = asyncio.create_task(run(ws, command, timeout_s=0.3))
        [child] = await pids()
        result = await task
    assert result.timed_out and result.exit_code == -signal.SIGKILL
    await exited(child, within=2)


async def test_background_processes_end_with_the_command(ws: Workspace) -> None:
    async with fifo(ws.root / "ready") as pids:
        result = await run(ws, "sleep 1000 & echo $! > ready; echo started")
        [child] = await pids()
    assert (result.output, result.exit_code) == ("started\n", 0)
    await exited(child, within=2)


async def test_a_process_leaving_the_group_does_not_hang_the_call(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "DRAIN_GRACE_S", 0.2)
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
    assert result.cut_bytes == size - sandbox.OUTPUT_HEAD - sandbox.OUTPUT_TAIL
    assert f"[... {result.cut_bytes} bytes of output cut ...]" in result.output
    assert result.output.startswith("y\ny\n") and result.output.endswith("y\n\nlast line\n")
    assert len(result.output) < 17_000
    assert peak < 4 * 1024 * 1024


async def test_cancellation_kills_the_group_before_it_propagates(ws: Workspace) -> None:
    async with fifo(ws.root / "ready") as pids:
        command = "sleep 1000 & echo $$ $! > ready; wait"
        task = asyncio.create_task(run(ws, command, timeout_s=60))
        shell, child = await pids()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert not running(shell)
    await exited(child, within=2)


async def test_a_missing_workspace_is_an_error_not_a_leak(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await sandbox.run_command("true", tmp_path / "gone", 5, {})
