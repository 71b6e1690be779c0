"""``threadline doctor`` starts each configured MCP server and lists its tools, or says why not."""

from __future__ import annotations

import json
from pathlib import Path

from tests.adapters.test_cli import threadline
from tests.fakes.mcp_server import stdio_command


def test_doctor_lists_each_servers_tools_or_says_why_it_failed(tmp_path: Path) -> None:
    ok, hanging = stdio_command(), stdio_command("--hang-initialize")
    (tmp_path / "threadline.toml").write_text(
        f"[mcp_servers.tickets]\ncommand = {json.dumps(ok[0])}\nargs = {json.dumps(ok[1:])}\n"
        '[mcp_servers.broken]\ncommand = "no-such-mcp-server"\n'
        f"[mcp_servers.slow]\ncommand = {json.dumps(hanging[0])}\nargs = {json.dumps(hanging[1:])}\ntimeout_s = 1\n"
        '[mcp_servers.off]\ncommand = "x"\nenabled = false\n'
    )
    out = threadline("doctor", cwd=tmp_path)
    lines = out.stdout.splitlines()
    tickets = next(line for line in lines if "MCP server tickets" in line)
    assert tickets.startswith("[ok  ] MCP server tickets: 12 tools: tickets__change_tools, ")
    assert "tickets__close_ticket (asks first), " in tickets and "tickets__lookup, " in tickets
    assert "[FAIL] MCP server broken: command not found: no-such-mcp-server" in lines
    assert "[FAIL] MCP server slow: no answer to initialize within 1 s" in lines
    assert "[--  ] MCP server off: disabled" in lines
    assert out.returncode == 1 and "Traceback" not in out.stdout + out.stderr


def test_doctor_names_gated_tools_and_gating_for_tools_a_server_lacks(tmp_path: Path) -> None:
    ok = stdio_command()
    server = f"command = {json.dumps(ok[0])}\nargs = {json.dumps(ok[1:])}\n"
    (tmp_path / "threadline.toml").write_text(
        f"[mcp_servers.tickets]\n{server}"
        '[mcp_servers.tickets.gating.close_ticket]\nrequires = ["looked"]\n'
        f"[mcp_servers.other]\n{server}"
        '[mcp_servers.other.gating.clsoe_ticket]\nrequires = ["looked"]\n'
    )
    lines = threadline("doctor", cwd=tmp_path).stdout.splitlines()
    tickets = next(line for line in lines if "MCP server tickets" in line)
    assert tickets.startswith("[ok  ] MCP server tickets: 12 tools") and tickets.endswith(
        "; gated: close_ticket"
    )
    assert (
        "[FAIL] MCP server other: gating declared for tools it does not have: clsoe_ticket" in lines
    )


def test_a_mistaken_gating_declaration_stops_the_program_with_its_place(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text(
        '[mcp_servers.tickets]\ncommand = "x"\n[mcp_servers.tickets.gating.close_ticket]\nrequires = ["a"]\nforbids = ["a"]\n'
    )
    out = threadline("doctor", cwd=tmp_path)
    assert (
        "both required and forbidden" in out.stdout + out.stderr
        and "Traceback" not in out.stdout + out.stderr
    )


def test_doctor_says_which_tools_are_not_offered_because_they_must_run_as_tasks(
    tmp_path: Path,
) -> None:
    hints = stdio_command("--catalog", "hints")
    (tmp_path / "threadline.toml").write_text(
        f"[mcp_servers.hints]\ncommand = {json.dumps(hints[0])}\nargs = {json.dumps(hints[1:])}\n"
    )
    out = threadline("doctor", cwd=tmp_path)
    line = next(line for line in out.stdout.splitlines() if "MCP server hints" in line)
    assert line.startswith(
        "[ok  ] MCP server hints: 3 tools (not offered: long_job: it can only be called as a task"
    )
    assert "the server does not declare task-augmented tools/call" in line
    assert "hints__fetch (asks first)" in line and "hints__lookup, " in line


def test_doctor_names_the_tools_called_as_tasks(tmp_path: Path) -> None:
    tasks = stdio_command("--catalog", "tasks")
    (tmp_path / "threadline.toml").write_text(
        f"[mcp_servers.jobs]\ncommand = {json.dumps(tasks[0])}\nargs = {json.dumps(tasks[1:])}\n"
    )
    out = threadline("doctor", cwd=tmp_path)
    line = next(line for line in out.stdout.splitlines() if "MCP server jobs:" in line)
    assert line.startswith(
        "[ok  ] MCP server jobs: 6 tools (called as tasks: announced, broken_job, confirm_job,"
        " research, stuck): "
    )


def test_doctor_says_how_each_server_signs_in(tmp_path: Path) -> None:
    ok = stdio_command()
    (tmp_path / "threadline.toml").write_text(
        f"[mcp_servers.tickets]\ncommand = {json.dumps(ok[0])}\nargs = {json.dumps(ok[1:])}\n"
        '[mcp_servers.docs]\nurl = "http://127.0.0.1:9/mcp"\ntimeout_s = 5\n'
        'headers = { Authorization = "Bearer ${DOCS_TOKEN}", X-Team = "support" }\n'
        '[mcp_servers.off]\nurl = "http://127.0.0.1:9/mcp"\nenabled = false\n'
    )
    out = threadline("doctor", cwd=tmp_path, env={"DOCS_TOKEN": "never-shown"})
    lines = out.stdout.splitlines()
    assert "[--  ] MCP server tickets: sign-in: none" in lines
    assert "[--  ] MCP server docs: sign-in: static headers (Authorization, X-Team)" in lines
    assert not any("MCP server off: sign-in" in line for line in lines)
    assert "never-shown" not in out.stdout + out.stderr


def test_doctor_says_each_oauth_servers_sign_in_state(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text(
        '[mcp_servers.docs]\nurl = "http://127.0.0.1:9/mcp"\ntimeout_s = 5\n'
        "[mcp_servers.docs.oauth]\n"
        '[mcp_servers.team]\nurl = "http://127.0.0.1:9/mcp"\n'
        '[mcp_servers.team.oauth]\nsign_in = "per_person"\n'
    )
    lines = threadline("doctor", cwd=tmp_path).stdout.splitlines()
    assert "[--  ] MCP server docs: sign-in: OAuth, shared" in lines
    assert "[--  ] MCP server docs: signed in: needs sign-in (`threadline mcp login docs`)" in lines
    assert "[--  ] MCP server team: not tried (each person signs in to it)" in lines
    assert (
        "[--  ] MCP server team: signed in: per person: 0 signed in (each person signs in the"
        " first time a run of theirs calls it)"
    ) in lines


def test_doctor_says_what_each_server_may_ask_during_a_call(tmp_path: Path) -> None:
    ok = stdio_command()
    (tmp_path / "threadline.toml").write_text(
        f"[mcp_servers.tickets]\ncommand = {json.dumps(ok[0])}\nargs = {json.dumps(ok[1:])}\n"
        "form_timeout_s = 120\nsampling_max_tokens = 0\n"
        '[mcp_servers.docs]\nurl = "http://127.0.0.1:9/mcp"\ntimeout_s = 5\n'
    )
    lines = threadline("doctor", cwd=tmp_path).stdout.splitlines()
    assert (
        "[--  ] MCP server tickets: forms wait 120 s for the run's person; sampling: off;"
        " roots: the thread's workspace"
    ) in lines
    assert (
        "[--  ] MCP server docs: forms wait 900 s for the run's person; sampling: up to 1,000"
        " tokens, each request approved on a card; roots: none (a remote server)"
    ) in lines
