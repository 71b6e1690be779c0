"""What a sandboxed command finds itself in: its user, environment, files, limits."""

from __future__ import annotations

import os
import time
from pathlib import Path

from bot.tools.bwrap import (
    ENVIRONMENT,
    OVERLAY_PREFIX,
    ROOT_SANDBOX_ID,
    STALE_OVERLAY_S,
    BwrapRunner,
    Limits,
    sweep_overlays,
)
from bot.tools.sandbox import Workspace
from tests.sandboxing import sandbox_runner


async def inside(runner: BwrapRunner, tmp_path: Path, command: str, timeout_s: float = 10) -> str:
    ws = Workspace.for_thread(tmp_path / "workspaces", "playground:t", runner.owner)
    result = await runner.run(command, ws, timeout_s, network=False)
    assert result.exit_code == 0, result.output
    return result.output


async def test_the_command_has_a_short_environment_and_its_own_user(tmp_path: Path) -> None:
    runner = sandbox_runner()
    out = await inside(runner, tmp_path, "env; echo uid=$(id -u) host=$(hostname) pwd=$(pwd)")
    env = dict(line.split("=", 1) for line in out.splitlines()[:-1])
    assert env == ENVIRONMENT
    user = ROOT_SANDBOX_ID if os.geteuid() == 0 else os.geteuid()
    assert out.splitlines()[-1] == f"uid={user} host=threadline pwd=/workspace"


async def test_the_limits_are_in_force(tmp_path: Path) -> None:
    limits = Limits()
    runner = sandbox_runner()
    out = await inside(
        runner,
        tmp_path,
        "cat /proc/self/limits; df -B1 --output=size /tmp /dev/shm | tail -n 2",
        timeout_s=30,
    )
    soft = {
        line[:26].strip(): line[26:].split()[0]
        for line in out.splitlines()
        if line.startswith("Max ")
    }
    assert soft["Max processes"] == str(limits.processes)
    assert soft["Max address space"] == str(limits.memory_bytes)
    assert soft["Max file size"] == str(limits.file_bytes)
    assert soft["Max open files"] == str(limits.open_files)
    assert soft["Max cpu time"] == "31"  # seconds: the timeout and one more
    assert soft["Max core file size"] == "0"
    assert [int(v) for v in out.split()[-2:]] == [limits.tmp_bytes, limits.shm_bytes]


async def test_the_system_is_there_read_only_and_the_bot_is_not(tmp_path: Path) -> None:
    runner = sandbox_runner()
    out = await inside(
        runner,
        tmp_path,
        (
            "ls /; ls /etc; touch /usr/x 2>&1; touch /etc/x 2>&1; echo made > /workspace/made; "
            "cat /proc/1/cmdline | tr '\\0' ' '; echo; ls /proc | grep -c '^[0-9]'"
        ),
    )
    top = set(out.split("\n", 1)[0].split()) | set(out.split())
    assert {"usr", "etc", "tmp", "proc", "dev", "workspace"} <= top
    for hidden in ("root", "home", "run", "var", "shadow", "gshadow", "sudoers", "threadline.toml"):
        assert hidden not in out.split(), hidden
    assert out.count("Read-only file system") == 2
    made = Workspace.for_thread(tmp_path / "workspaces", "playground:t").root / "made"
    assert made.read_text() == "made\n"
    assert int(out.split()[-1]) <= 4  # bubblewrap's init, the shell, and what it runs


def test_scratch_directories_a_killed_process_left_are_swept_and_fresh_ones_kept(
    tmp_path: Path,
) -> None:
    now = time.time()
    left = tmp_path / f"{OVERLAY_PREFIX}left"
    (left / "work" / "work").mkdir(parents=True)
    os.utime(left, (now - STALE_OVERLAY_S - 60, now - STALE_OVERLAY_S - 60))
    running = tmp_path / f"{OVERLAY_PREFIX}running"
    running.mkdir()
    workspace = tmp_path / "playground_t"
    workspace.mkdir()
    os.utime(workspace, (now - 10 * STALE_OVERLAY_S,) * 2)

    assert sweep_overlays(tmp_path, now) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [running.name, workspace.name]
