"""The real ``threadline run`` killed with SIGKILL at random moments (a seeded
``random.Random``), fifty times and more, and started again on the same data directory each time,
while a person keeps writing in threads and clicking Approve through the playground's HTTP API:
right after a message is accepted, while an answer streams, once an approval card is shown,
right after a click, while a command runs, once the todo panel is shown. Approvals are asked
for in the first half of the run and not in the second (``approval = "never"``).

Once everything is idle the playground and the database must show: no message lost, no thread
left unanswered, no tool call without a result, no command that ran twice, no second todo panel
and no Stop button left behind. One summary line prints the figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.e2e.test_process_restart import browser, free_port, open_page
from tests.fakes.openai_server import FakeOpenAI
from tests.reliability.world import (
    PLAN_HEAD,
    buttons,
    figures,
    marker_counts,
    poll,
    respond,
    unanswered,
)
from tests.sandboxing import sandbox_runner

SEED = int(os.environ.get("THREADLINE_KILL_SEED", "12"))
KILLS = int(os.environ.get("THREADLINE_KILLS", "50"))
MOMENTS = ("post", "stream", "card", "click", "command", "panel")
START = 30.0
MOMENT = 4.0
SETTLE = 20.0
ASK = ""
NEVER = '[tools.run_command]\napproval = "never"\n'
USER = {"user_id": "alice", "user_name": "Alice"}


@asynccontextmanager
async def program(
    cwd: Path, port: int, env: dict[str, str]
) -> AsyncIterator[asyncio.subprocess.Process]:
    """``threadline run`` serving the playground on ``port``; its output is read (and dropped)
    all along so a full pipe never stalls it."""
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
        env=kept | env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert proc.stdout is not None
    out = proc.stdout
    try:
        async with asyncio.timeout(START):
            while b"Threadline playground:" not in (line := await out.readline()):
                assert line, "threadline exited before serving"
        drain = asyncio.create_task(out.read())
        yield proc
    finally:
        if proc.returncode is None:
            proc.terminate()
        async with asyncio.timeout(START):
            await proc.wait()
        with contextlib.suppress(NameError):
            await drain


class Person:
    """Alice in her browser: writes, clicks, and keeps track of what the playground accepted."""

    def __init__(self, http: aiohttp.ClientSession, base: str, rng: random.Random) -> None:
        self.http = http
        self.base = base
        self.rng = rng
        self.accepted: set[str] = set()
        self.threads: list[str] = []
        self.sent = 0
        self.stale: set[str] = set()
        """Cards still showing Approve for a request that was decided already (see
        ``test_a_kill_right_after_a_click_leaves_the_card_decided``)."""

    async def thread(self, thread_id: str) -> dict[str, Any]:
        async with self.http.get(f"{self.base}/api/threads/{thread_id}") as resp:
            assert resp.status == 200, await resp.text()
            data: dict[str, Any] = await resp.json()
        return {"id": thread_id, "messages": data["messages"]}

    async def all_threads(self) -> list[dict[str, Any]]:
        return [await self.thread(t) for t in self.threads]

    async def write(self, text: str, thread_id: str | None) -> str:
        self.sent += 1
        event_id = f"event-{self.sent:06d}"
        body = {"text": text, "event_id": event_id, **USER}
        if thread_id is not None:
            body["thread_id"] = thread_id
        async with self.http.post(f"{self.base}/api/messages", json=body) as resp:
            assert resp.status == 202, await resp.text()
            thread_id = str((await resp.json())["thread_id"])
        self.accepted.add(event_id)
        if thread_id not in self.threads:
            self.threads.append(thread_id)
        return thread_id

    async def approve(self, thread_id: str, card: dict[str, Any]) -> str | None:
        action = next(b for b in card["buttons"] if b["label"] == "Approve")["action_id"]
        body = {"thread_id": thread_id, "action_id": action, "message_id": card["id"], **USER}
        async with self.http.post(f"{self.base}/api/actions", json=body) as resp:
            assert resp.status in (200, 202), await resp.text()
            note: str | None = (await resp.json()).get("note")
        return note

    async def idle_thread(self) -> str | None:
        """A thread where nothing is going on (its last message is the bot's, with no buttons),
        or ``None`` for a new thread."""
        if self.threads and self.rng.random() < 0.6:
            thread = await self.thread(self.rng.choice(self.threads))
            last = thread["messages"][-1] if thread["messages"] else None
            if last is not None and last["bot"] and not last["buttons"]:
                return str(thread["id"])
        return None


async def next_event(
    ws: aiohttp.ClientWebSocketResponse, match: Any, within: float = MOMENT
) -> dict[str, Any] | None:
    """The first live update that matches, or ``None`` if none came within ``within`` seconds."""
    try:
        async with asyncio.timeout(within):
            async for frame in ws:
                event: dict[str, Any] = json.loads(frame.data)
                if match(event):
                    return event
    except TimeoutError:
        return None
    return None


def bot_message_in(thread_id: str, with_label: str | None = None) -> Any:
    def match(event: dict[str, Any]) -> bool:
        message = event.get("message") or {}
        if event.get("thread_id") != thread_id or not message.get("bot"):
            return False
        return with_label is None or any(
            b["label"] == with_label for b in message.get("buttons", [])
        )

    return match


async def one_life(
    person: Person, ws: aiohttp.ClientWebSocketResponse, data: Path, asking: bool
) -> tuple[str, bool]:
    """People act, then the moment chosen for the kill comes (or does not, within a bound)."""
    rng = person.rng
    for thread_id, card in buttons(await person.all_threads(), "Approve"):
        if rng.random() < 0.5:  # a card left from before the restart
            await person.approve(thread_id, card)
    moment = rng.choice(MOMENTS)
    marker = f"{rng.getrandbits(32):08x}"
    kind = {"stream": "chat", "panel": "plan", "card": "cmd", "click": "cmd", "command": "cmd"}.get(
        moment, rng.choice(("chat", "plan", "cmd"))
    )
    text = {
        "chat": "How is the week going?",
        "plan": "Make a plan for the team lunch",
        "cmd": f"Please log cmd-{marker}",
    }[kind]
    thread_id = await person.write(text, await person.idle_thread())
    if moment == "post":
        return moment, True
    if moment == "stream":
        return moment, await next_event(ws, bot_message_in(thread_id)) is not None
    if moment == "panel":
        return moment, await next_event(
            ws, lambda e: e.get("thread_id") == thread_id and PLAN_HEAD in json.dumps(e)
        ) is not None
    if asking:
        card = await next_event(ws, bot_message_in(thread_id, "Approve"))
        if card is None:
            return moment, False
        if moment == "card":
            return moment, True
        await person.approve(thread_id, card["message"])
        if moment == "click":
            return moment, True
    return moment, await poll(lambda: marker_counts(data)[marker] > 0, MOMENT)


async def settled(person: Person, database: Path) -> bool:
    """Nothing left to do: no card, no Stop button, no thread waiting for an answer, no
    accepted message waiting for its session, no run going on."""
    threads = await person.all_threads()
    cards = [(t, card) for t, card in buttons(threads, "Approve") if card["id"] not in person.stale]
    for thread_id, card in cards:
        if "was already" in (await person.approve(thread_id, card) or ""):
            person.stale.add(card["id"])
    if cards or any(unanswered(t) for t in threads):
        return False
    with contextlib.closing(sqlite3.connect(database)) as db:
        waiting = db.execute("SELECT count(*) FROM arrivals").fetchone()[0]
        busy = db.execute(
            "SELECT count(*) FROM sessions WHERE state IN ('running', 'resumed')"
        ).fetchone()[0]
    return waiting == 0 and busy == 0


def stuck_runs(database: Path) -> int:
    """Runs paused for an approval that nobody can give any more (decided already)."""
    with contextlib.closing(sqlite3.connect(database)) as db:
        return int(
            db.execute(
                "SELECT count(*) FROM sessions WHERE state = 'awaiting_approval'"
            ).fetchone()[0]
        )


async def why_not(person: Person, database: Path) -> str:
    threads = await person.all_threads()
    with contextlib.closing(sqlite3.connect(database)) as db:
        waiting = db.execute("SELECT key, event_id FROM arrivals").fetchall()
        busy = db.execute("SELECT key, state FROM sessions WHERE state != 'idle'").fetchall()
    return json.dumps(
        {
            "cards": [
                m["id"] for _, m in buttons(threads, "Approve") if m["id"] not in person.stale
            ],
            "stops": [m["id"] for _, m in buttons(threads, "Stop")],
            "unanswered": [t for t in threads if unanswered(t)],
            "arrivals": waiting,
            "busy": busy,
        },
        indent=1,
    )[:6000]


@pytest.mark.timeout(240)
async def test_fifty_random_kills_lose_nothing_and_do_nothing_twice(tmp_path: Path) -> None:
    sandbox_runner()
    rng = random.Random(SEED)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    data = tmp_path / "data"
    moments: list[tuple[str, bool]] = []
    async with FakeOpenAI(default=respond) as fake, browser() as http:
        env = {
            "OPENAI_BASE_URL": fake.base_url,
            "OPENAI_API_KEY": "sk-test",
            "THREADLINE_SANDBOX": "bwrap",
            "THREADLINE_DATA_DIR": str(data),
            "THREADLINE_HTTP_PORT": str(port),
            "THREADLINE_DEMO_CHUNK_DELAY_S": "0",
        }
        person = Person(http, base, rng)
        for life in range(KILLS):
            asking = life < KILLS // 2
            (tmp_path / "threadline.toml").write_text(ASK if asking else NEVER)
            async with program(tmp_path, port, env) as proc:
                await open_page(http, base)
                async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                    moments.append(await one_life(person, ws, data, asking))
                proc.send_signal(signal.SIGKILL)
                await proc.wait()
        (tmp_path / "threadline.toml").write_text(NEVER)
        async with program(tmp_path, port, env):
            await open_page(http, base)
            calm = await poll(lambda: settled(person, data / "threadline.sqlite3"), SETTLE)
            left = "" if calm else await why_not(person, data / "threadline.sqlite3")
    found = figures(data, len(moments), person.accepted)
    reached = sum(1 for _, hit in moments if hit)
    print(
        f"\nrandom kills (seed {SEED}): {found.line()} stale_approval_cards={len(person.stale)} "
        f"runs_stuck_after_a_click={stuck_runs(data / 'threadline.sqlite3')} "
        f"moments_reached={reached}/{len(moments)} idle={calm}"
    )
    assert found.kills >= KILLS
    assert found.lost == 0
    assert found.unanswered == 0
    assert found.orphans == 0
    assert found.duplicates == 0
    assert found.panels == 0
    assert found.stops == 0
    assert calm, f"not idle after {SETTLE:g}s: {left}"
