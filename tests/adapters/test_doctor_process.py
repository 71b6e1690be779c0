"""``threadline doctor`` run as a process, as an operator meets it: the report and nothing else,
the demo model named once, a URL that is no OpenAI-compatible API said so, tokens of the wrong
shape caught before any call, unreachable servers in a sentence, and a busy HTTP port."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp import web

from tests.e2e.test_process_restart import free_port, threadline
from tests.fakes.openai_server import FakeOpenAI, Fault, Reply

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0
KEY = "sk-doctor-secret-value-123"


async def doctor(tmp_path: Path, command: str = "doctor", **env: str) -> tuple[int, str, str]:
    """``threadline COMMAND`` with only ``env`` set (and a data directory): its exit status,
    standard output and standard error. Run without blocking the loop the fakes serve on."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("THREADLINE_", "OPENAI_", "SLACK_", "DISCORD_"))
    }
    clean |= {"PYTHONPATH": str(ROOT), "THREADLINE_DATA_DIR": str(tmp_path / "data")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        command,
        cwd=tmp_path,
        env=clean | env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(WAIT):
        out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def line_of(out: str, start: str) -> str:
    found = [line for line in out.splitlines() if line.startswith(start)]
    assert len(found) == 1, out
    return found[0]


async def test_retries_are_said_in_the_model_line_and_nothing_is_logged(tmp_path: Path) -> None:
    async with FakeOpenAI() as server:
        server.push(Fault.server_error(502), Fault.server_error(503), Reply("OK"))
        code, out, err = await doctor(
            tmp_path,
            OPENAI_BASE_URL=server.base_url,
            OPENAI_API_KEY=KEY,
            THREADLINE_MODEL_MAX_RETRIES="3",
            THREADLINE_HTTP_PORT=str(free_port()),
        )
    assert code == 0, out + err
    line = line_of(out, "[ok  ] model gpt-4o-mini")
    assert line.startswith(
        f"[ok  ] model gpt-4o-mini at {server.base_url} answered (2 characters), after 2 retries "
        "(the model server failed (HTTP 503)"
    )
    assert err == ""  # no timestamped warnings: the report is the output
    assert KEY not in out


async def test_the_demo_model_is_named_once_and_no_other_model(tmp_path: Path) -> None:
    code, out, err = await doctor(tmp_path, THREADLINE_HTTP_PORT=str(free_port()))
    assert code == 0, out + err
    said = [line for line in out.splitlines() if "demo model" in line]
    assert said == [
        "[ok  ] model: the offline demo model (no OPENAI_API_KEY or OPENAI_BASE_URL) answered "
        + said[0].split("answered ", 1)[1]
    ]
    assert "gpt-4o-mini" not in out
    assert err == ""


@asynccontextmanager
async def html_site() -> AsyncIterator[str]:
    """A web site answering every path with an HTML page."""

    async def page(request: web.Request) -> web.Response:
        return web.Response(
            text="<!doctype html><html><body>Welcome</body></html>", content_type="text/html"
        )

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    finally:
        await runner.cleanup()


async def model_line(tmp_path: Path, base_url: str, **env: str) -> str:
    code, out, err = await doctor(
        tmp_path,
        OPENAI_BASE_URL=base_url,
        THREADLINE_MODEL_MAX_RETRIES="0",
        THREADLINE_HTTP_PORT=str(free_port()),
        **env,
    )
    assert code == 1 and err == "", out + err
    return line_of(out, "[FAIL] model")


async def test_a_url_without_v1_is_said_so_with_the_url_to_set(tmp_path: Path) -> None:
    # Ollama's usual slip: its root instead of its OpenAI-compatible /v1
    async with FakeOpenAI() as server:
        root = server.base_url.removesuffix("/v1")
        line = await model_line(tmp_path, root)
    assert line == (
        f"[FAIL] model gpt-4o-mini: the server at {root} answered 404 at /models: not an "
        f"OpenAI-compatible API; its /v1/models answers: set OPENAI_BASE_URL={root}/v1"
    )
    assert "does not know the model" not in line


async def test_a_web_page_is_not_taken_for_a_model_server(tmp_path: Path) -> None:
    async with html_site() as site:
        line = await model_line(tmp_path, f"{site}/v1")
    assert line == (
        f"[FAIL] model gpt-4o-mini: the server at {site}/v1 answered 200 with an HTML page at "
        "/models: not an OpenAI-compatible API; check OPENAI_BASE_URL (Ollama's is "
        "http://HOST:11434/v1)"
    )


@pytest.mark.parametrize(
    ("models", "listed"),
    [
        (("llama3.2", "qwen2.5"), "It lists: llama3.2, qwen2.5"),
        (
            tuple(f"model-{n}" for n in range(20)) + ("llama3.1",),
            "It lists 21 models; the nearest: llama3.1",
        ),
    ],
)
async def test_an_unknown_model_on_a_compatible_server_is_named_with_those_it_has(
    tmp_path: Path, models: tuple[str, ...], listed: str
) -> None:
    async with FakeOpenAI(models=models) as server:
        server.push(Fault.unknown_model("llama3"))
        line = await model_line(tmp_path, server.base_url, THREADLINE_MODEL="llama3")
    assert "does not know the model 'llama3' (HTTP 404)" in line
    assert line.endswith(listed), line


async def test_a_discord_token_of_the_wrong_shape_is_caught_before_any_call(
    tmp_path: Path,
) -> None:
    # nothing listens at the API base: a call would fail differently
    code, out, _ = await doctor(
        tmp_path,
        DISCORD_TOKEN="bar",
        DISCORD_API_BASE="http://127.0.0.1:9/api",
        THREADLINE_HTTP_PORT=str(free_port()),
    )
    assert code == 1
    line = line_of(out, "[FAIL] Discord:")
    assert line.startswith("[FAIL] Discord: DISCORD_TOKEN does not look like a bot token")
    assert "Reset Token" in line and "bar" not in line.split("DISCORD_TOKEN", 1)[1][:40]


async def test_a_slack_token_of_the_wrong_kind_is_named(tmp_path: Path) -> None:
    code, out, _ = await doctor(
        tmp_path,
        SLACK_BOT_TOKEN="xoxp-a-user-token",
        SLACK_APP_TOKEN="xapp-1-2-3",
        SLACK_API_URL="http://127.0.0.1:9/api/",
        THREADLINE_HTTP_PORT=str(free_port()),
    )
    assert code == 1
    line = line_of(out, "[FAIL] Slack:")
    assert "SLACK_BOT_TOKEN: must be the Bot User OAuth Token, which starts with xoxb-" in line
    assert "xoxp-a-user-token" not in out


async def test_unreachable_platforms_are_said_in_a_sentence(tmp_path: Path) -> None:
    # .invalid never resolves (RFC 2606): what an offline machine sees for every name
    code, out, err = await doctor(
        tmp_path,
        DISCORD_TOKEN="MTIzNDU2Nzg5.Gabcde.doctor-secret-part",
        DISCORD_API_BASE="http://discord.invalid/api",
        SLACK_BOT_TOKEN="xoxb-1-2-3",
        SLACK_APP_TOKEN="xapp-1-2-3",
        SLACK_API_URL="http://slack.invalid/api/",
        OPENAI_BASE_URL="http://models.invalid/v1",
        THREADLINE_MODEL_MAX_RETRIES="0",
        THREADLINE_HTTP_PORT=str(free_port()),
    )
    assert code == 1 and err == "", out + err
    for start, where, host in (
        ("[FAIL] Discord:", "could not reach Discord at http://discord.invalid/api/v10", "discord"),
        ("[FAIL] Slack:", "could not reach the Slack API at http://slack.invalid/api/", "slack"),
        ("[FAIL] model", "could not reach the model server at http://models.invalid/v1", "models"),
    ):
        line = line_of(out, start)
        assert f"{where}: the name {host}.invalid could not be resolved (" in line, line
        assert line.endswith("; offline?)"), line
        assert "Error" not in line  # no exception class names
    assert "doctor-secret-part" not in out


async def test_a_busy_port_is_named_by_doctor_and_stops_run(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, out, _ = await doctor(tmp_path, THREADLINE_HTTP_PORT=str(port))
        assert code == 1
        assert line_of(out, "[FAIL] HTTP server:") == (
            f"[FAIL] HTTP server: THREADLINE_HTTP_PORT: port {port} on 127.0.0.1 is already in "
            "use (another program, or another Threadline, listens there): stop it, or set "
            "THREADLINE_HTTP_PORT to a free port"
        )
        code, out, err = await doctor(tmp_path, "run", THREADLINE_HTTP_PORT=str(port))
    assert code == 2, out + err
    said = err.strip().splitlines()[-1]
    assert said == (
        f"threadline: invalid configuration: THREADLINE_HTTP_PORT: port {port} on 127.0.0.1 "
        "is already in use (another program, or another Threadline, listens there): stop it, "
        "or set THREADLINE_HTTP_PORT to a free port"
    )
    assert "Errno" not in err and "Traceback" not in err


async def test_a_free_port_and_a_running_threadline_on_it_are_told_apart(tmp_path: Path) -> None:
    port = free_port()
    code, out, _ = await doctor(tmp_path, THREADLINE_HTTP_PORT=str(port))
    assert code == 0, out
    assert f"[ok  ] HTTP server: port {port} on 127.0.0.1 is free (THREADLINE_HTTP_PORT)" in out
    (tmp_path / "running").mkdir()
    async with threadline(tmp_path / "running", port):
        code, out, _ = await doctor(tmp_path, THREADLINE_HTTP_PORT=str(port))
    assert code == 0, out
    assert line_of(out, "[--  ] HTTP server:").startswith(
        f"[--  ] HTTP server: port {port} on 127.0.0.1 is in use by a running Threadline"
    )
