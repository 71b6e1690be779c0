"""The real program, killed with SIGKILL and started again: while a run waits for approval (the
click after the restart resumes the run, the tool runs, and the answer arrives), and in the
middle of a model call (the run is picked up again, once)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import socket
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from tests.fakes.openai_server import CutOff, Delay, FakeOpenAI, Reply

WAIT = 30.0


def browser() -> aiohttp.ClientSession:
    """An HTTP client that keeps cookies (also for 127.0.0.1), as a browser does."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def open_page(http: aiohttp.ClientSession, base: str) -> None:
    """Open the playground's page, which starts the session (its cookie)."""
    async with http.get(f"{base}/") as page:
        assert page.status == 200, await page.text()


_PORTS = iter(random.Random(os.getpid()).sample(range(20000, 32000), 12000))


def free_port() -> int:
    """A port for a process the test starts: free now, below the kernel's ephemeral range
    (32768 and up), so no outgoing connection of this or another process is handed it before
    the process binds it, and never the same one twice in this test run."""
    for port in _PORTS:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port left between 20000 and 32000")


@asynccontextmanager
async def threadline(
    tmp_path: Path, port: int, **settings: str
) -> AsyncIterator[asyncio.subprocess.Process]:
    """``threadline run`` with nothing configured (playground, demo model) on ``port``, but for
    ``settings`` (environment variables)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "SLACK_", "DISCORD_", "THREADLINE_"))
    }
    env |= {
        "THREADLINE_DATA_DIR": str(tmp_path / "data"),
        "THREADLINE_HTTP_PORT": str(port),
        "THREADLINE_DEMO_CHUNK_DELAY_S": "0",
        **settings,
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        "run",
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert proc.stdout is not None
    try:
        async with asyncio.timeout(WAIT):
            while b"Threadline playground:" not in (line := await proc.stdout.readline()):
                assert line, "threadline exited before serving"
        yield proc
    finally:
        if proc.returncode is None:
            proc.terminate()
            async with asyncio.timeout(WAIT):
                await proc.communicate()


async def until_event(
    ws: aiohttp.ClientWebSocketResponse, match: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    async with asyncio.timeout(WAIT):
        async for frame in ws:
            event = json.loads(frame.data)
            if match(event):
                return event
    raise AssertionError("the connection closed first")


async def until_true(check: Callable[[], bool]) -> None:
    """Wait for a condition on disk (checked every 20 ms, for at most ``WAIT`` seconds)."""
    async with asyncio.timeout(WAIT):
        for _ in range(int(WAIT / 0.02) + 1):
            if check():
                return
            await asyncio.sleep(0.02)


def card_recorded(database: Path, card_id: str) -> bool:
    """The approval request knows its card (so a decision after a restart can update it)."""
    with contextlib.closing(sqlite3.connect(database)) as db:
        return (
            db.execute("SELECT 1 FROM approvals WHERE card_id = ?", (card_id,)).fetchone()
            is not None
        )


def stop_recorded(database: Path, message_id: str) -> bool:
    """The session knows which message shows its run's Stop button (and what it shows)."""
    with contextlib.closing(sqlite3.connect(database)) as db:
        rows = db.execute("SELECT stop_buttons FROM sessions").fetchall()
    return any(live["id"] == message_id for row in rows for live in json.loads(row[0]))


def card_in(event: dict[str, Any]) -> bool:
    message = event.get("message") or {}
    return event.get("type") == "message" and any(
        b["label"] == "Approve" for b in message.get("buttons", [])
    )


async def test_a_kill_between_card_and_click_loses_nothing(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    user = {"user_name": "Alice"}
    async with browser() as http:  # Alice's browser: her session cookie outlives the restart
        async with threadline(tmp_path, port) as first:
            await open_page(http, base)
            async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                async with http.post(
                    f"{base}/api/messages",
                    json={"text": "Plan a team lunch", "event_id": "event-000001", **user},
                ) as resp:
                    assert resp.status == 202
                    thread_id = (await resp.json())["thread_id"]
                card = (await until_event(ws, card_in))["message"]
            await until_true(
                lambda: card_recorded(tmp_path / "data" / "threadline.sqlite3", card["id"])
            )
            first.send_signal(signal.SIGKILL)
            await first.wait()

        async with threadline(tmp_path, port):
            approve = next(b for b in card["buttons"] if b["label"] == "Approve")["action_id"]
            async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                async with http.post(
                    f"{base}/api/actions",
                    json={"thread_id": thread_id, "action_id": approve, **user},
                ) as resp:
                    assert (await resp.json())["note"] == "Approved."
                await until_event(
                    ws,
                    lambda e: e.get("type") == "message" and "script ends" in e["message"]["text"],
                )
            async with http.get(f"{base}/api/threads/{thread_id}") as resp:
                messages = (await resp.json())["messages"]
    shown = "\n".join(m["text"] for m in messages)
    decided = next(m for m in messages if m["id"] == card["id"])
    assert "Approved" in decided["text"] and decided["buttons"] == []
    assert "script ends" in shown and "command ran" in shown, shown
    assert len([m for m in messages if m["text"].startswith("🔐")]) == 0  # no second card


async def test_a_kill_mid_run_is_picked_up_once(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    user = {"user_name": "Alice"}
    held = [asyncio.Event(), asyncio.Event()]
    state = tmp_path / "data" / "playground.json"
    async with FakeOpenAI() as fake, browser() as http:
        fake.push(*(Delay(Reply("never sent"), until=gate) for gate in held))
        model = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
        try:
            async with threadline(tmp_path, port, **model) as first:
                await open_page(http, base)
                async with http.post(
                    f"{base}/api/messages",
                    json={"text": "Summarise the week", "event_id": "event-000002", **user},
                ) as resp:
                    thread_id = (await resp.json())["thread_id"]
                await fake.wait_for_requests(1, within=WAIT)
                first.send_signal(signal.SIGKILL)  # in the middle of the model call
                await first.wait()
            async with threadline(tmp_path, port, **model) as second:
                await fake.wait_for_requests(2, within=WAIT)  # picked up where it left off
                await until_true(lambda: "picking up where I left off" in state.read_text())
                second.send_signal(signal.SIGKILL)  # and cut off again
                await second.wait()
            async with (
                threadline(tmp_path, port, **model),
                http.ws_connect(f"{base}/api/ws?client=t") as ws,
            ):
                async with http.get(f"{base}/api/threads/{thread_id}") as resp:
                    shown = "\n".join(m["text"] for m in (await resp.json())["messages"])
                if "Send a message to go on" not in shown:
                    await until_event(ws, lambda e: "Send a message to go on" in json.dumps(e))
                async with http.get(f"{base}/api/threads/{thread_id}") as resp:
                    shown = "\n".join(m["text"] for m in (await resp.json())["messages"])
        finally:
            for gate in held:
                gate.set()
        assert len(fake.requests) == 2  # not picked up a second time
    assert "picking up where I left off" in shown
    assert "Send a message to go on" in shown


async def test_a_kill_mid_answer_leaves_no_stop_button_behind(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    user = {"user_id": "alice", "user_name": "Alice"}
    stall = asyncio.Event()
    async with FakeOpenAI() as fake, browser() as http:
        fake.push(
            CutOff(
                Reply("Half of an answer that never ends", text_chunk_chars=4), 4, hold_until=stall
            )
        )
        fake.push(Reply("The whole answer."))
        model = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test"}
        try:
            async with threadline(tmp_path, port, **model) as first:
                await open_page(http, base)
                async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                    async with http.post(
                        f"{base}/api/messages",
                        json={"text": "Tell me", "event_id": "event-000003", **user},
                    ) as resp:
                        thread_id = (await resp.json())["thread_id"]
                    shown = await until_event(
                        ws,
                        lambda e: (
                            e.get("type") == "message"
                            and any(
                                b["label"] == "Stop"
                                for b in (e.get("message") or {}).get("buttons", [])
                            )
                        ),
                    )
                half = shown["message"]["id"]
                await until_true(
                    lambda: stop_recorded(tmp_path / "data" / "threadline.sqlite3", half)
                )
                first.send_signal(signal.SIGKILL)  # mid-answer: the Stop button is on the page
                await first.wait()
            async with (
                threadline(tmp_path, port, **model),
                http.ws_connect(f"{base}/api/ws?client=t") as ws,
            ):
                await until_event(ws, lambda e: "The whole answer." in json.dumps(e))
                async with http.get(f"{base}/api/threads/{thread_id}") as resp:
                    messages = (await resp.json())["messages"]
        finally:
            stall.set()
    left = next(m for m in messages if m["id"] == half)
    assert left["buttons"] == [] and left["text"].startswith("Half")
    assert not any(b["label"] == "Stop" for m in messages for b in m["buttons"])
