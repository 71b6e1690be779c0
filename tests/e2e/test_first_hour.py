"""A new user's first hour with the real ``threadline run``: the playground only answers for its
own name and to its own page's session, the demo model answers small talk without a plan or a
tool, the data stays private, and beyond loopback the playground needs its token."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from tests.e2e.test_process_restart import (
    WAIT,
    browser,
    free_port,
    open_page,
    threadline,
    until_event,
)

TOKEN = "first-hour-token-0123456789"


async def test_a_foreign_host_is_refused_and_hello_gets_a_brief_answer(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with threadline(tmp_path, port), browser() as http:
        # a page of another site whose name points here (DNS rebinding) gets nothing
        for path in ("/", "/api/threads"):
            async with http.get(
                f"{base}{path}", headers={"Host": f"rebind.example:{port}"}
            ) as refused:
                assert refused.status == 403
                assert "not served as rebind.example" in (await refused.json())["error"]
        async with http.post(
            f"{base}/api/messages", json={"text": "hi", "event_id": "event-nosession"}
        ) as anonymous:
            assert anonymous.status == 401  # no session: the page was never opened
        await open_page(http, base)
        async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
            async with http.post(
                f"{base}/api/messages",
                json={"text": "Hello!", "event_id": "event-hello-01", "user_name": "Ada"},
            ) as posted:
                assert posted.status == 202
                thread_id = (await posted.json())["thread_id"]
            await until_event(
                ws,
                lambda e: (
                    e.get("type") == "message"
                    and e["message"]["bot"]
                    and e["message"]["text"].endswith("at work.")
                    and not e["message"]["buttons"]
                ),
            )
        async with http.get(f"{base}/api/threads/{thread_id}") as shown:
            thread = await shown.json()
    texts = [m["text"] for m in thread["messages"]]
    assert texts[0] == "Hello!" and len(texts) == 2
    assert texts[1].startswith("Hello, Ada! 👋") and "offline demo model" in texts[1]
    assert thread["pins"] == [] and all(m["buttons"] == [] for m in thread["messages"])
    data = tmp_path / "data"
    assert data.stat().st_mode & 0o777 == 0o700
    assert (data / "threadline.sqlite3").stat().st_mode & 0o777 == 0o600


async def test_beyond_loopback_it_refuses_to_start_without_a_token(tmp_path: Path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "SLACK_", "DISCORD_", "THREADLINE_"))
    }
    env |= {
        "THREADLINE_DATA_DIR": str(tmp_path / "data"),
        "THREADLINE_HTTP_HOST": "0.0.0.0",
        "THREADLINE_HTTP_PORT": str(free_port()),
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        "run",
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(WAIT):
        out, err = await proc.communicate()
    assert proc.returncode == 2
    said = err.decode().strip().splitlines()
    assert said[-1].startswith("threadline: invalid configuration: THREADLINE_PLAYGROUND_TOKEN:")
    assert "Traceback" not in err.decode()
    assert "Threadline playground:" not in out.decode()


async def test_with_a_token_the_page_is_opened_once_with_it(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    settings = {"THREADLINE_HTTP_HOST": "0.0.0.0", "THREADLINE_PLAYGROUND_TOKEN": TOKEN}
    async with threadline(tmp_path, port, **settings) as proc, browser() as http:
        async with http.get(f"{base}/", allow_redirects=False) as refused:
            assert refused.status == 401
        async with http.get(f"{base}/?token={TOKEN}", allow_redirects=False) as opened:
            assert opened.status == 303 and opened.headers["Location"] == "/"
        async with http.get(f"{base}/api/threads") as api:
            assert api.status == 200
        assert proc.stdout is not None
        proc.terminate()
        async with asyncio.timeout(WAIT):
            printed = await proc.stdout.read()
            await proc.wait()
    assert TOKEN.encode() not in printed  # the token is never printed or logged


async def test_the_healthcheck_follows_the_configured_port(tmp_path: Path) -> None:
    port = free_port()
    async with threadline(tmp_path, port):
        env = {k: v for k, v in os.environ.items() if not k.startswith("THREADLINE_")}
        env["THREADLINE_HTTP_PORT"] = str(port)
        check = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "adapters.cli",
            "healthcheck",
            cwd=tmp_path,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        async with asyncio.timeout(WAIT):
            out, _ = await check.communicate()
        assert check.returncode == 0, out
        assert f"healthy: http://127.0.0.1:{port}/healthz" in out.decode()
