"""Where commands run, as THREADLINE_SANDBOX and the machine decide, and what the operator is
told; the network setting per tool and per channel."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.api.inbound import ThreadKey
from bot.config import Settings, load_settings
from bot.errors import ConfigError
from bot.infra.clock import ManualClock
from bot.sessions.model import Session
from bot.tools.base import ToolContext
from bot.tools.builtin import builtin_tools
from bot.tools.bwrap import BwrapRunner, probe
from bot.tools.commands import HostRunner, choose_runner, describe_sandbox
from tests.fakes.bwrap import refusing_bwrap
from tests.sandboxing import sandbox_runner


@pytest.fixture(autouse=True)
def fresh_probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test probes its own machine (PATH), and settings come only from the test."""
    monkeypatch.chdir(tmp_path)
    for name in ("THREADLINE_SANDBOX", "THREADLINE_WORKSPACE_TOOLS", "THREADLINE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    probe.cache_clear()
    yield
    probe.cache_clear()


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


@pytest.fixture
def refusing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(refusing_bwrap(tmp_path / "bin").parent))


def settings(tmp_path: Path, **values: Any) -> Settings:
    return Settings(data_dir=tmp_path / "data", **values)


def test_by_default_commands_run_in_the_sandbox(tmp_path: Path) -> None:
    sandbox_runner()
    assert isinstance(choose_runner(settings(tmp_path)), BwrapRunner)
    ok, words = describe_sandbox(settings(tmp_path))
    assert ok is True and words.startswith("sandbox: commands run in bubblewrap (")


def test_a_commands_memory_in_all_is_bounded_and_doctor_says_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox_runner()
    runner = choose_runner(settings(tmp_path))
    assert isinstance(runner, BwrapRunner)
    assert runner.limits.total_memory_bytes < 4 << 30  # the defaults fit a 4 GiB host
    ok, words = describe_sandbox(settings(tmp_path))
    assert ok is True and words.endswith(
        "; commands' memory: per process 256 MiB × 12 processes, with /tmp and /dev/shm at most "
        "3392 MiB in all "
        "(THREADLINE_COMMAND_PROCESS_MEMORY_MIB, THREADLINE_COMMAND_PROCESSES)"
    )
    monkeypatch.setenv("THREADLINE_COMMAND_PROCESSES", "8")
    monkeypatch.setenv("THREADLINE_COMMAND_PROCESS_MEMORY_MIB", "128")
    chosen = load_settings()
    runner = choose_runner(chosen)
    assert isinstance(runner, BwrapRunner)
    assert (runner.limits.processes, runner.limits.memory_bytes) == (8, 128 << 20)
    assert (
        "per process 128 MiB × 8 processes, with /tmp and /dev/shm at most 1344 MiB in all"
        in (describe_sandbox(chosen)[1])
    )
    monkeypatch.setenv("THREADLINE_COMMAND_PROCESSES", "0")
    with pytest.raises(ConfigError, match="THREADLINE_COMMAND_PROCESSES"):
        load_settings()


def test_none_runs_on_the_host_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        runner = choose_runner(settings(tmp_path, sandbox="none"))
    assert isinstance(runner, HostRunner)
    assert "THREADLINE_SANDBOX=none: commands run without a sandbox" in caplog.text
    ok, words = describe_sandbox(settings(tmp_path, sandbox="none"))
    assert ok is None and "unsandboxed" in words


@pytest.mark.usefixtures("no_bwrap")
def test_without_bubblewrap_run_command_is_not_offered(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        tools = {t.name for t in builtin_tools(settings(tmp_path))}
    assert "run_command" not in tools and {"read_file", "write_file"} <= tools
    assert "run_command is not offered" in caplog.text
    assert "bubblewrap is not installed" in caplog.text
    assert "apt-get install bubblewrap" in caplog.text
    ok, words = describe_sandbox(settings(tmp_path))
    assert ok is False
    assert "run_command is not offered" in words and "THREADLINE_SANDBOX=none" in words


@pytest.mark.usefixtures("refusing")
def test_a_bubblewrap_that_cannot_create_namespaces_is_named(tmp_path: Path) -> None:
    assert choose_runner(settings(tmp_path)) is None
    found = probe()
    assert not found.usable
    assert "cannot create the sandbox's namespaces" in found.detail
    assert "kernel does not allow non-privileged user namespaces" in found.detail
    ok, words = describe_sandbox(settings(tmp_path))
    assert ok is False and "unprivileged_userns_clone=1" in words and "seccomp" in words


@pytest.mark.usefixtures("no_bwrap")
def test_a_required_sandbox_that_cannot_work_stops_the_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        builtin_tools(settings(tmp_path, sandbox="bwrap"))
    assert caught.value.setting == "THREADLINE_SANDBOX"
    assert "bubblewrap is not installed" in caught.value.problem
    ok, words = describe_sandbox(settings(tmp_path, sandbox="bwrap"))
    assert ok is False and "will not start" in words


def test_no_workspace_tools_need_no_sandbox(tmp_path: Path) -> None:
    ok, words = describe_sandbox(settings(tmp_path, workspace_tools=False))
    assert ok is None and "not needed" in words


@pytest.mark.parametrize(
    ("variable", "value"),
    [("THREADLINE_SANDBOX", "maybe"), ("THREADLINE_SANDBOX", ""), ("THREADLINE_SANDBOX", "BWRAP")],
)
def test_an_unknown_sandbox_mode_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert caught.value.setting == "THREADLINE_SANDBOX"


def test_a_network_setting_that_is_not_a_yes_or_no_is_refused(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text('[tools.run_command]\nnetwork = "sometimes"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert caught.value.setting == "threadline.toml, line 2: tools.run_command.network"


# -- the network, per tool and per channel --------------------------------------------------


@asynccontextmanager
async def loopback_listener() -> AsyncIterator[tuple[int, list[int]]]:
    accepted: list[int] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1], accepted


async def connect_from(tools: dict[str, Any], key: str, port: int) -> str:
    item = tools["run_command"]
    ctx = ToolContext(ThreadKey(key), Session(key=ThreadKey(key)), None, ManualClock())
    command = f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected' 2>&1"
    result: str = await item.invoke(ctx, item.parse(json.dumps({"command": command})))
    return result


async def test_the_network_is_off_unless_the_operator_allows_it(tmp_path: Path) -> None:
    sandbox_runner()
    closed = {t.name: t for t in builtin_tools(settings(tmp_path))}
    allowed = {
        t.name: t
        for t in builtin_tools(
            settings(
                tmp_path,
                tools={"run_command": {"network": True}},
                channels={"playground:offline": {"tools": {"run_command": {"network": False}}}},
            )
        )
    }
    async with loopback_listener() as (port, accepted):
        assert "connected\n" not in await connect_from(closed, "playground:a", port)
        assert accepted == []
        assert "connected\n" not in await connect_from(allowed, "playground:offline", port)
        assert accepted == []
        assert "connected\n" in await connect_from(allowed, "playground:b", port)
        assert accepted == [1]
