"""The real program, driven as a user would through the playground's HTTP API: an approved
command runs in the sandbox and sees nothing of the bot; canary secrets in the bot's
environment, ``.env`` and ``threadline.toml`` reach no thread message, model request or log line.
Without bubblewrap, the program starts without ``run_command`` and says why."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from bot.llm.wire import from_data
from tests.e2e.test_process_restart import WAIT, browser, card_in, free_port, open_page, until_event
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply
from tests.sandboxing import sandbox_runner


@asynccontextmanager
async def threadline(cwd: Path, port: int, env: dict[str, str]) -> AsyncIterator[list[str]]:
    """``threadline run`` in ``cwd`` with exactly ``env`` (plus what Python needs); yields the
    lines it logged until it served, and the rest once it stopped."""
    kept = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "SLACK_", "DISCORD_", "THREADLINE_"))
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        "run",
        cwd=cwd,
        env=kept | {"THREADLINE_HTTP_PORT": str(port), **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert proc.stdout is not None
    log: list[str] = []
    try:
        async with asyncio.timeout(WAIT):
            while "Threadline playground:" not in (line := (await proc.stdout.readline()).decode()):
                assert line, f"threadline exited before serving: {''.join(log)}"
                log.append(line)
        yield log
    finally:
        if proc.returncode is None:
            proc.terminate()
        async with asyncio.timeout(WAIT):
            rest, _ = await proc.communicate()
        log.append(rest.decode())


async def post(http: aiohttp.ClientSession, url: str, **body: Any) -> dict[str, Any]:
    async with http.post(url, json=body) as resp:
        assert resp.status < 300, await resp.text()
        answer: dict[str, Any] = await resp.json()
        return answer


async def test_an_approved_command_runs_in_the_sandbox_and_sees_nothing_of_the_bot(
    tmp_path: Path,
) -> None:
    sandbox_runner()
    canary = {
        name: f"canary-{name}-{uuid.uuid4().hex}"
        for name in ("key", "token", "plain", "dotenv", "toml")
    }
    (tmp_path / ".env").write_text(f"SOME_SERVICE_TOKEN={canary['dotenv']}\n")
    (tmp_path / "threadline.toml").write_text(
        f'[channels."playground:{canary["toml"]}".approvers]\nanyone = true\n'
    )
    command = (
        "pwd; id -u; cat /proc/1/environ | tr '\\0' '\\n'; cat /proc/[0-9]*/environ; env; "
        f"cat {tmp_path}/.env {tmp_path}/threadline.toml ../../../.env; ls {tmp_path}/data"
    )
    user = {"user_id": "alice", "user_name": "Alice"}
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with FakeOpenAI() as fake, browser() as http:
        fake.push(
            Reply(
                "Let me look.",
                calls=[FakeCall("run_command", {"command": command, "timeout_s": 30})],
            ),
            Reply("All done."),
        )
        env = {
            "OPENAI_BASE_URL": fake.base_url,
            "OPENAI_API_KEY": canary["key"],
            "GITHUB_TOKEN": canary["token"],
            "CANARY_PLAIN": canary["plain"],
            "THREADLINE_SANDBOX": "bwrap",
            "THREADLINE_DATA_DIR": str(tmp_path / "data"),
        }
        async with threadline(tmp_path, port, env) as log:
            await open_page(http, base)
            async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                sent = await post(
                    http,
                    f"{base}/api/messages",
                    text="What can you see?",
                    event_id="event-sbx-1",
                    **user,
                )
                card = (await until_event(ws, card_in))["message"]
                assert "run_command" in card["text"]
                approve = next(b for b in card["buttons"] if b["label"] == "Approve")["action_id"]
                await post(
                    http,
                    f"{base}/api/actions",
                    thread_id=sent["thread_id"],
                    action_id=approve,
                    **user,
                )
                await until_event(
                    ws,
                    lambda e: e.get("type") in ("message", "edit") and "All done." in json.dumps(e),
                )
            async with http.get(f"{base}/api/threads/{sent['thread_id']}") as resp:
                shown = json.dumps(await resp.json())
        requests = await fake.wait_for_requests(2)
    [result] = [from_data(m["content"]) for m in requests[1].messages if m.get("role") == "tool"]
    assert result.startswith("/workspace\n") and "HOME=/workspace" in result
    assert "No such file or directory" in result  # the bot's files are not there
    bodies = json.dumps([r.body for r in requests])
    written = "".join(log)
    for name, value in canary.items():
        assert value not in result, name
        assert value not in bodies, name
        assert value not in shown, name
        assert value not in written, name
    assert "commands run in a bubblewrap sandbox" in written


async def test_without_bubblewrap_the_program_runs_without_run_command(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    port = free_port()
    env = {
        "PATH": str(tmp_path / "bin"),
        "THREADLINE_DATA_DIR": str(tmp_path / "data"),
        "THREADLINE_DEMO_CHUNK_DELAY_S": "0",
    }
    async with FakeOpenAI() as fake, browser() as http:
        fake.push(Reply("Hello."))
        env |= {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
        async with threadline(tmp_path, port, env) as log:
            await open_page(http, f"http://127.0.0.1:{port}")
            await post(
                http,
                f"http://127.0.0.1:{port}/api/messages",
                text="hi",
                event_id="event-sbx-2",
                user_id="bob",
                user_name="Bob",
            )
            [request] = await fake.wait_for_requests(1, within=WAIT)
    offered = {tool["function"]["name"] for tool in request.body.get("tools", [])}
    assert "run_command" not in offered and "read_file" in offered
    written = "".join(log)
    assert "run_command is not offered: the bubblewrap sandbox cannot be used" in written
    assert "apt-get install bubblewrap" in written
