"""``threadline mcp list`` and ``threadline mcp try`` as an operator runs them: the real program
against the fake MCP servers (stdio from threadline.toml, streamable HTTP by its URL)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from tests.adapters.test_cli import ROOT, threadline
from tests.fakes.mcp_http import FakeMcpHttp
from tests.fakes.mcp_server import stdio_command

SECRET = "docs-token-never-printed"


def configure(tmp_path: Path, extra: str = "") -> Path:
    effects = tmp_path / "effects"
    command = stdio_command("--effects", str(effects))
    (tmp_path / "threadline.toml").write_text(
        f"[mcp_servers.tickets]\ncommand = {json.dumps(command[0])}\n"
        f"args = {json.dumps(command[1:])}\ntimeout_s = 20\n"
        '[mcp_servers.broken]\ncommand = "no-such-mcp-server"\n'
        '[mcp_servers.docs]\nurl = "http://127.0.0.1:9/mcp"\n'
        'headers = { Authorization = "Bearer ${DOCS_TOKEN}" }\nenabled = false\n' + extra
    )
    return effects


def test_list_says_each_servers_state_sign_in_and_tools(tmp_path: Path) -> None:
    configure(tmp_path, '[tools."tickets__lookup"]\napproval = "ask"\n')
    out = threadline("mcp", "list", cwd=tmp_path, env={"DOCS_TOKEN": SECRET})
    lines = out.stdout.splitlines()
    at = lines.index
    tickets = lines[
        at(
            "tickets  (stdio: " + " ".join(stdio_command()) + f" --effects {tmp_path / 'effects'})"
        ) :
    ]
    assert tickets[1:3] == [
        "  sign-in: none",
        "  state: connects (fake-tickets 1.0, protocol 2025-11-25): 12 tools",
    ]
    assert "    tickets__lookup  [read-only; asks first]  Look a ticket up by id." in lines
    assert "    tickets__close_ticket  [destructive; asks first]  Close a ticket." in lines
    assert "    tickets__echo  [read-only; runs without asking]  Say the text back." in lines
    broken = lines[at("broken  (stdio: no-such-mcp-server)") :]
    assert broken[1:3] == [
        "  sign-in: none",
        "  state: does not connect: command not found: no-such-mcp-server",
    ]
    docs = lines[at("docs  (streamable HTTP http://127.0.0.1:9/mcp)") :]
    assert docs[1:3] == [
        "  sign-in: static headers (Authorization)",
        "  state: disabled (`threadline mcp try docs` tries it)",
    ]
    assert out.returncode == 1  # broken does not connect
    assert SECRET not in out.stdout + out.stderr and "Traceback" not in out.stderr


def test_list_with_no_servers_says_how_to_add_one(tmp_path: Path) -> None:
    out = threadline("mcp", "list", cwd=tmp_path)
    assert out.stdout == "No MCP servers are configured ([mcp_servers.NAME] in threadline.toml).\n"
    assert out.returncode == 0


def test_try_a_configured_server_calls_its_tool_and_prints_the_result(tmp_path: Path) -> None:
    effects = configure(tmp_path)
    out = threadline("mcp", "try", "tickets", "close_ticket", '{"id": "T-7"}', cwd=tmp_path)
    lines = out.stdout.splitlines()
    assert (
        "  connects (fake-tickets 1.0, protocol 2025-11-25): 12 tools, by their own names" in lines
    )
    assert "    close_ticket  [destructive; asks first]  Close a ticket." in lines
    assert lines[-3:] == ['calling close_ticket {"id": "T-7"}', "  result:", "    closed T-7"]
    assert out.returncode == 0 and effects.read_text() == "closed T-7\n"


def test_try_says_when_the_tool_or_the_server_fails(tmp_path: Path) -> None:
    configure(tmp_path)
    failed = threadline("mcp", "try", "tickets", "fail", cwd=tmp_path)
    assert failed.stdout.splitlines()[-2:] == [
        "  the tool says it failed (isError):",
        "    the ticket store is read-only today",
    ]
    assert failed.returncode == 1
    error = threadline("mcp", "try", "tickets", "rpc_error", cwd=tmp_path)
    assert error.stdout.splitlines()[-1] == (
        "  the call failed: rpc_error failed: database exploded (error -32603)"
    )
    assert error.returncode == 1
    broken = threadline("mcp", "try", "broken", cwd=tmp_path)
    assert broken.stdout.splitlines()[-1] == (
        "  does not connect: command not found: no-such-mcp-server"
    )
    assert broken.returncode == 1


def test_try_tries_a_disabled_server(tmp_path: Path) -> None:
    configure(tmp_path)
    out = threadline(
        "mcp", "try", "docs", "--timeout", "5", cwd=tmp_path, env={"DOCS_TOKEN": SECRET}
    )
    assert out.stdout.splitlines()[:2] == [
        "docs  (streamable HTTP http://127.0.0.1:9/mcp)",
        "  sign-in: static headers (Authorization)",
    ]
    assert out.stdout.splitlines()[2].startswith("  does not connect: ConnectError")
    assert out.returncode == 1 and SECRET not in out.stdout + out.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ("nope",),
            "no MCP server named 'nope' in threadline.toml (configured: broken, docs, tickets)",
        ),
        (("tickets", "lookup", "{id: 1}"), "the arguments are not JSON: Expecting property name"),
        (("tickets", "lookup", "[1]"), "the arguments must be a JSON object"),
        (("tickets", "no_such_tool"), "the server has no tool 'no_such_tool' (its tools: lookup, "),
        (("tickets", "--timeout", "0"), "--timeout must be above 0 and at most 3600"),
    ],
)
def test_input_that_cannot_be_tried_is_named_and_exits_2(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    configure(tmp_path)
    out = threadline("mcp", "try", *args, cwd=tmp_path, env={"DOCS_TOKEN": SECRET})
    assert out.stderr.splitlines()[-1].startswith("threadline mcp try: ")
    assert said in out.stderr and "Traceback" not in out.stderr
    assert out.returncode == 2


async def test_try_reaches_a_streamable_http_server_by_its_url(tmp_path: Path) -> None:
    async with FakeMcpHttp() as fake:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "adapters.cli",
            "mcp",
            "try",
            fake.url,
            "echo",
            '{"text": "hello over HTTP"}',
            cwd=tmp_path,
            env=os.environ | {"PYTHONPATH": str(ROOT)},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        async with asyncio.timeout(60):
            stdout, stderr = await proc.communicate()
    lines = stdout.decode().splitlines()
    assert lines[:3] == [
        f"server  (streamable HTTP {fake.url})",
        "  sign-in: OAuth when the server asks for it (kept for this run only)",
        "  connects (fake-tickets 1.0, protocol 2025-11-25): 12 tools, by their own names",
    ]
    assert lines[-2:] == ["  result:", "    hello over HTTP"]
    assert proc.returncode == 0, stderr.decode()
    assert ("echo", {"text": "hello over HTTP"}) in fake.behaviour.calls


async def threadline_async(cwd: Path, *args: str, **env: str) -> tuple[int, str, str]:
    """The real program, while the test's own loop serves the fake HTTP server."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        *args,
        cwd=cwd,
        env=os.environ | {"PYTHONPATH": str(ROOT)} | env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(60):
        stdout, stderr = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, stdout.decode(), stderr.decode()


async def test_a_server_that_wants_a_sign_in_is_said_so(tmp_path: Path) -> None:
    async with FakeMcpHttp(token="right") as fake:
        (tmp_path / "threadline.toml").write_text(
            f'[mcp_servers.docs]\nurl = "{fake.url}"\n'
            'headers = { Authorization = "Bearer ${DOCS_TOKEN}" }\n'
        )
        anonymous = await threadline_async(tmp_path, "mcp", "try", fake.url, DOCS_TOKEN="x")
        wrong = await threadline_async(tmp_path, "mcp", "try", "docs", DOCS_TOKEN="wrong")
        right = await threadline_async(
            tmp_path, "mcp", "try", "docs", "lookup", '{"id": "T-2"}', DOCS_TOKEN="right"
        )
    assert anonymous[1].splitlines()[-1] == (
        "  does not connect: the server asks for a sign-in (HTTP 401), and the OAuth sign-in"
        " did not go through (the log says why)"
    )
    assert anonymous[0] == 1
    assert wrong[1].splitlines()[-1] == (
        "  does not connect: the server refuses the sign-in (HTTP 403: not allowed, or too few"
        " scopes)"
    )
    assert wrong[0] == 1 and "wrong" not in wrong[1] + wrong[2]
    assert right[1].splitlines()[-1] == "    T-2: printer on fire (open)" and right[0] == 0


def test_list_says_a_tool_that_must_run_as_a_task_is_not_offered(tmp_path: Path) -> None:
    hints = stdio_command("--catalog", "hints")
    (tmp_path / "threadline.toml").write_text(
        f"[mcp_servers.hints]\ncommand = {json.dumps(hints[0])}\nargs = {json.dumps(hints[1:])}\n"
    )
    out = threadline("mcp", "list", cwd=tmp_path)
    [line] = [line for line in out.stdout.splitlines() if "hints__long_job" in line]
    assert "not offered: it can only be called as a task" in line
    assert out.returncode == 0


def test_try_calls_a_tool_as_a_task_and_says_its_status(tmp_path: Path) -> None:
    tasks = stdio_command("--catalog", "tasks")
    (tmp_path / "threadline.toml").write_text(
        f"[mcp_servers.jobs]\ncommand = {json.dumps(tasks[0])}\nargs = {json.dumps(tasks[1:])}\n"
    )
    out = threadline("mcp", "try", "jobs", "research", '{"topic": "tides"}', cwd=tmp_path)
    lines = out.stdout.splitlines()
    assert "    research  [read-only; runs without asking; called as a task]" in "\n".join(lines)
    assert lines[lines.index('calling research {"topic": "tides"}') + 1 :] == [
        "  task working: research started",
        "  task working: reading source 1 of 3",
        "  task working: reading source 2 of 3",
        "  task working: reading source 3 of 3",
        "  task completed: done",
        "  result:",
        "    research on tides: 3 sources agree",
    ]
    assert out.returncode == 0


def test_try_answers_what_the_server_asks_during_the_call(tmp_path: Path) -> None:
    from tests.fakes.mcp_asking_server import stdio_command as asking

    command = asking()
    (tmp_path / "threadline.toml").write_text(
        f"[mcp_servers.asking]\ncommand = {json.dumps(command[0])}\n"
        f"args = {json.dumps(command[1:])}\ntimeout_s = 20\n"
    )
    booked = threadline("mcp", "try", "asking", "book", cwd=tmp_path)
    assert "  the server asks: Who is travelling?" in booked.stdout
    assert "declined: its defaults do not make an answer (name: this field is required;" in (
        booked.stdout
    )
    assert '"action": "decline"' in booked.stdout and booked.returncode == 0
    where = threadline("mcp", "try", "asking", "where", cwd=tmp_path)
    assert f'roots: ["{tmp_path.resolve().as_uri()}"]' in where.stdout
    asked = threadline("mcp", "try", "asking", "summarise", '{"text": "hello"}', cwd=tmp_path)
    assert "sampling refused: threadline mcp try runs no model" in asked.stdout
