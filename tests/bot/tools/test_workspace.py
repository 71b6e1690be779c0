"""The workspace tools as the engine calls them: ``tool.parse(json)`` then ``tool.invoke``;
each command test runs in the sandbox and unsandboxed (THREADLINE_SANDBOX=none)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from bot.api.inbound import ThreadKey
from bot.infra.clock import ManualClock
from bot.sessions.model import Session
from bot.tools import ToolRegistry
from bot.tools.base import Tool, ToolContext, ToolError
from bot.tools.builtin import files as files_module
from bot.tools.builtin.workspace import workspace_tools
from bot.tools.bwrap import BwrapRunner
from bot.tools.commands import CommandRunner, HostRunner
from bot.tools.sandbox import Workspace
from tests.sandboxing import exited, marker, processes_with, running, sandbox_runner, until

KEY = "slack:T1:C1:1700000000.0001"


def context(key: str = KEY) -> ToolContext:
    return ToolContext(ThreadKey(key), Session(key=ThreadKey(key)), None, ManualClock())


class Thread:
    """One thread's view of the tools."""

    def __init__(self, root: Path, runner: CommandRunner, key: str = KEY) -> None:
        self.tools = {item.name: item for item in workspace_tools(root, runner)}
        self.ctx = context(key)
        self.dir = Workspace.for_thread(root, key, runner.owner).root
        self.sandboxed = isinstance(runner, BwrapRunner)
        self.cwd = "/workspace" if self.sandboxed else str(self.dir)

    async def __call__(self, name: str, **arguments: Any) -> str:
        item = self.tools[name]
        return await item.invoke(self.ctx, item.parse(json.dumps(arguments)))


@pytest.fixture(params=["sandbox", "host"])
def runner(request: pytest.FixtureRequest) -> CommandRunner:
    return sandbox_runner() if request.param == "sandbox" else HostRunner()


@pytest.fixture
def thread(tmp_path: Path, runner: CommandRunner) -> Thread:
    return Thread(tmp_path / "workspaces", runner)


def test_tools_register_with_their_approval_modes(tmp_path: Path) -> None:
    tools: dict[str, Tool] = {t.name: t for t in workspace_tools(tmp_path, HostRunner())}
    registry = ToolRegistry(tools.values())
    assert registry.names == [
        "edit_file",
        "grep",
        "list_files",
        "read_file",
        "run_command",
        "write_file",
    ]
    modes = {name: (t.side_effects, t.approval) for name, t in tools.items()}
    assert modes["run_command"] == (True, "ask")
    assert modes["write_file"] == modes["edit_file"] == (True, "never")
    assert modes["read_file"] == modes["list_files"] == modes["grep"] == (False, "never")
    assert tools["run_command"].parameters["properties"]["timeout_s"]["maximum"] == 600


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("run_command", '{"command": "ls", "timeout_s": 0}'),
        ("run_command", '{"command": "ls", "timeout_s": 601}'),
        ("run_command", '{"command": ""}'),
        ("run_command", '{"command": "ls", "shell": "bash"}'),
        ("read_file", '{"path": "a", "offset": -1}'),
        ("read_file", "{}"),
        ("edit_file", '{"path": "a", "old": "", "new": "x"}'),
        ("grep", '{"pattern": "x", "max_results": 0}'),
        ("write_file", "not json"),
    ],
)
def test_invalid_arguments_are_tool_errors(tmp_path: Path, name: str, raw: str) -> None:
    tools = {t.name: t for t in workspace_tools(tmp_path, HostRunner())}
    with pytest.raises(ToolError, match=f"invalid arguments for {name}"):
        tools[name].parse(raw)


# -- run_command ---------------------------------------------------------------------------


async def test_command_runs_in_the_workspace(thread: Thread) -> None:
    (thread.dir / "notes.txt").write_text("hello\n")
    out = await thread("run_command", command="pwd; echo $HOME; cat notes.txt")
    assert out == f"{thread.cwd}\n{thread.cwd}\nhello\n[exit code 0]"


async def test_a_failing_command_reports_output_and_exit_code(thread: Thread) -> None:
    out = await thread("run_command", command="echo oops >&2; exit 3")
    assert out == "oops\n[exit code 3]"
    assert await thread("run_command", command="true") == "(no output)\n[exit code 0]"
    out = await thread("run_command", command="kill -KILL $$")
    if thread.sandboxed:  # bubblewrap reports a signal the way a shell does
        assert out == "(no output)\n[exit code 137, as when signal 9 (Killed) ends a process]"
    else:
        assert out == "(no output)\n[killed by signal 9 (Killed)]"


async def said_started(path: Path) -> bool:
    """The command wrote ``started`` to ``path`` (a file: a FIFO in the workspace does not
    join the host and a sandboxed command, whose workspace is an overlay when the bot is root)."""

    def said() -> bool:
        try:
            return path.read_text() == "started\n"
        except OSError:
            return False

    return await until(said)


async def test_a_command_that_never_ends_is_killed_with_its_children(thread: Thread) -> None:
    mark = marker()
    command = f"echo begun; sleep 9999.{mark} & echo started > ready; wait"
    task = asyncio.create_task(thread("run_command", command=command, timeout_s=1))
    assert await said_started(thread.dir / "ready")
    assert processes_with(mark)
    out = await task
    assert out.startswith("begun\n")
    assert out.endswith("[timed out after 1 s: the command and its processes were killed]")
    assert await until(lambda: not processes_with(mark), within=2)


async def test_a_flood_of_output_is_cut_in_the_middle(thread: Thread) -> None:
    out = await thread("run_command", command="yes | head -c 50000000")
    assert "bytes of output cut ...]" in out
    assert len(out) < 17_000
    assert out.endswith("y\n[exit code 0]")


async def test_secrets_do_not_reach_commands(
    thread: Thread, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        "FOO_TOKEN": "t0ken",
        "OPENAI_API_KEY": "sk-123",
        "APP_SECRET": "s3cret",
        "DB_PASSWORD": "hunter2",
        "OPENAI_BASE_URL": "http://proxy",
        "SLACK_BOT_TOKEN": "xoxb",
        "SLACK_API_URL": "http://slack",
        "DISCORD_TOKEN": "discord-t0ken",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HARMLESS", "visible")
    out = await thread("run_command", command="env")
    names = {line.split("=", 1)[0] for line in out.splitlines() if "=" in line}
    assert not names & set(secrets)
    for value in secrets.values():
        assert value not in out
    # unsandboxed, the rest of the environment passes; the sandbox has its own short one
    assert ("HARMLESS=visible" in out) is not thread.sandboxed
    assert f"HOME={thread.cwd}" in out
    assert "PATH=" in out


async def test_stop_kills_the_command_before_the_cancellation_propagates(
    thread: Thread,
) -> None:
    mark = marker()
    command = f"sleep 9999.{mark} & echo started > ready; wait"
    task = asyncio.create_task(thread("run_command", command=command, timeout_s=600))
    assert await said_started(thread.dir / "ready")
    [*pids] = processes_with(mark)
    assert pids
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for pid in pids:
        await exited(pid, within=2)
    assert not any(running(pid) for pid in pids)


# -- files ---------------------------------------------------------------------------------


async def test_write_read_edit(thread: Thread) -> None:
    text = "def main():\n    print('hi')\n    return 0\n"
    out = await thread("write_file", path="src/app.py", content=text)
    assert out == f"Wrote {len(text)} bytes to src/app.py."
    assert (thread.dir / "src" / "app.py").read_text() == text
    assert await thread("read_file", path="src/app.py") == (
        "     1\tdef main():\n     2\t    print('hi')\n     3\t    return 0"
    )
    assert await thread("read_file", path="src/app.py", offset=1, limit=1) == (
        "     2\t    print('hi')\n[1 more lines; continue with offset=2]"
    )
    out = await thread("edit_file", path="src/app.py", old="'hi'", new="'hello'")
    assert out == "Replaced 1 occurrence in src/app.py."
    assert "print('hello')" in (thread.dir / "src" / "app.py").read_text()
    assert await thread("read_file", path="src/app.py", offset=9) == "src/app.py has only 3 lines."


async def test_edit_refuses_missing_or_ambiguous_text(thread: Thread) -> None:
    await thread("write_file", path="a.txt", content="x = 1\nx = 1\n")
    with pytest.raises(ToolError, match="was not found in 'a.txt'"):
        await thread("edit_file", path="a.txt", old="y = 2", new="z")
    with pytest.raises(ToolError, match="found 2 times in 'a.txt'.*count=2"):
        await thread("edit_file", path="a.txt", old="x = 1", new="x = 2")
    assert (thread.dir / "a.txt").read_text() == "x = 1\nx = 1\n"
    out = await thread("edit_file", path="a.txt", old="x = 1", new="x = 2", count=2)
    assert out == "Replaced 2 occurrences in a.txt."
    with pytest.raises(ToolError, match="does not exist"):
        await thread("edit_file", path="b.txt", old="x", new="y")


async def test_reads_refuse_binary_oversized_and_directories(
    thread: Thread, monkeypatch: pytest.MonkeyPatch
) -> None:
    (thread.dir / "blob.bin").write_bytes(b"\x7fELF\x00\x01")
    (thread.dir / "big.txt").write_text("x" * 100)
    (thread.dir / "dir").mkdir()
    monkeypatch.setattr(files_module, "MAX_READ_BYTES", 50)
    with pytest.raises(ToolError, match="'blob.bin' is a binary file"):
        await thread("read_file", path="blob.bin")
    with pytest.raises(ToolError, match=r"'big.txt' is too large \(100 bytes"):
        await thread("read_file", path="big.txt")
    with pytest.raises(ToolError, match="'dir' is a directory"):
        await thread("read_file", path="dir")
    with pytest.raises(ToolError, match="'nope.txt' does not exist"):
        await thread("read_file", path="nope.txt")


async def test_long_files_are_read_in_pages(thread: Thread) -> None:
    await thread("write_file", path="log.txt", content="".join(f"{'z' * 99}\n" for _ in range(400)))
    out = await thread("read_file", path="log.txt")
    assert len(out) < 17_000
    last = out.splitlines()[-1]
    assert last.startswith("[") and "continue with offset=" in last


@pytest.mark.parametrize(
    ("tool_name", "arguments"),
    [
        ("read_file", {"path": "../outside.txt"}),
        ("read_file", {"path": "/etc/passwd"}),
        ("read_file", {"path": "etc/passwd"}),
        ("read_file", {"path": "pw"}),
        ("write_file", {"path": "etc/evil", "content": "x"}),
        ("write_file", {"path": "../../evil", "content": "x"}),
        ("write_file", {"path": "outdir/new/evil", "content": "x"}),
        ("edit_file", {"path": "pw", "old": "root", "new": "toor"}),
        ("list_files", {"path": "etc"}),
        ("list_files", {"path": "outdir"}),
        ("grep", {"pattern": "root", "path": "pw"}),
    ],
)
async def test_paths_never_leave_the_workspace(
    thread: Thread, tmp_path: Path, tool_name: str, arguments: dict[str, Any]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (thread.dir / "etc").symlink_to("/etc")
    (thread.dir / "pw").symlink_to("/etc/passwd")
    (thread.dir / "outdir").symlink_to(outside)
    with pytest.raises(ToolError, match=r"outside the workspace|is absolute") as caught:
        await thread(tool_name, **arguments)
    assert repr(arguments["path"]) in str(caught.value)
    assert list(outside.iterdir()) == []


async def test_symlinks_inside_the_workspace(thread: Thread) -> None:
    (thread.dir / "real.txt").write_text("real\n")
    (thread.dir / "alias.txt").symlink_to("real.txt")
    assert await thread("read_file", path="alias.txt") == "     1\treal"
    with pytest.raises(ToolError, match="symlink"):
        await thread("write_file", path="alias.txt", content="x")
    assert (thread.dir / "real.txt").read_text() == "real\n"


async def test_list_files(thread: Thread, monkeypatch: pytest.MonkeyPatch) -> None:
    await thread("write_file", path="src/a.py", content="a")
    await thread("write_file", path="src/b.txt", content="bb")
    await thread("write_file", path=".git/config", content="x")
    (thread.dir / "etc").symlink_to("/etc")
    assert await thread("list_files") == "\n".join(
        [".git/", "etc -> /etc", "src/", "src/a.py (1 bytes)", "src/b.txt (2 bytes)"]
    )
    assert await thread("list_files", path="src", pattern="*.py") == "src/a.py (1 bytes)"
    assert "Nothing under" in await thread("list_files", pattern="*.rs")
    monkeypatch.setattr(files_module, "MAX_LIST_ENTRIES", 2)
    assert (await thread("list_files")).endswith("[listing stopped at 2 entries; narrow it down]")


async def test_grep(thread: Thread) -> None:
    await thread("write_file", path="src/a.py", content="import os\nTODO: fix\n")
    await thread("write_file", path="notes.md", content="todo later\nTODO: more\n")
    (thread.dir / "blob.bin").write_bytes(b"TODO\x00")
    (thread.dir / "etc").symlink_to("/etc")
    out = await thread("grep", pattern="TODO")
    assert (
        out
        == "notes.md:2: TODO: more\nsrc/a.py:2: TODO: fix\n[1 binary, unreadable or oversized files skipped]"
    )
    assert await thread("grep", pattern="(?i)todo", path="notes.md", max_results=1) == (
        "notes.md:1: todo later\n[stopped after 1 matches; narrow the search]"
    )
    assert await thread("grep", pattern="root:") == (
        "No matches for 'root:' in '.'.\n[1 binary, unreadable or oversized files skipped]"
    )
    with pytest.raises(ToolError, match="invalid regular expression"):
        await thread("grep", pattern="(unclosed")


async def test_threads_get_their_own_directories(tmp_path: Path, runner: CommandRunner) -> None:
    root = tmp_path / "workspaces"
    keys = [KEY, "slack:T1:C1:1700000000.0002", "playground:abc", "discord:1:2", "a/../../b"]
    threads = [Thread(root, runner, key) for key in keys]
    for index, thread in enumerate(threads):
        await thread("write_file", path="who.txt", content=str(index))
    for index, thread in enumerate(threads):
        assert await thread("read_file", path="who.txt") == f"     1\t{index}"
        assert thread.dir.parent == root.resolve()
    assert len({thread.dir for thread in threads}) == len(keys)
    assert sorted(p.name for p in root.iterdir()) == sorted(t.dir.name for t in threads)


@pytest.mark.parametrize(
    ("tool_name", "arguments"),
    [
        ("read_file", {"path": "linked.txt"}),
        ("write_file", {"path": "linked.txt", "content": "overwritten"}),
        ("edit_file", {"path": "linked.txt", "old": "secret", "new": "changed"}),
        ("grep", {"pattern": "secret", "path": "linked.txt"}),
    ],
)
async def test_hard_links_to_files_outside_are_refused(
    tmp_path: Path, tool_name: str, arguments: dict[str, Any]
) -> None:
    thread = Thread(tmp_path / "workspaces", HostRunner())
    outside = tmp_path / "passwd"
    outside.write_text("root:secret\n")
    os.link(outside, thread.dir / "linked.txt")
    try:
        out = await thread(tool_name, **arguments)
    except ToolError as exc:
        out = str(exc)
    assert "secret" not in out.replace("'secret'", "")
    assert "hard link" in out or "skipped" in out
    assert outside.read_text() == "root:secret\n"


def test_without_a_runner_there_is_no_run_command(tmp_path: Path) -> None:
    names = {t.name for t in workspace_tools(tmp_path, None)}
    assert names == {"edit_file", "grep", "list_files", "read_file", "write_file"}


def test_the_model_is_told_where_sandboxed_commands_run(tmp_path: Path) -> None:
    sandboxed = {t.name: t for t in workspace_tools(tmp_path, sandbox_runner())}
    assert "/workspace" in sandboxed["run_command"].description
    assert "no network" in sandboxed["run_command"].description
    host = {t.name: t for t in workspace_tools(tmp_path, HostRunner())}
    assert "sandbox" not in host["run_command"].description
