"""The real ``threadline run`` on PostgreSQL (``THREADLINE_DATABASE_URL``): killed between an
approval card and its click, started again, the click resumes the run, and everything is in the
database (nothing in the data directory's SQLite); an unreachable database stops it at once with
one clear line; ``threadline doctor`` says whether the database answers and its schema version."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import asyncpg

from bot.storage.postgres.store import migrations
from tests.e2e.test_process_restart import (
    WAIT,
    browser,
    card_in,
    free_port,
    open_page,
    threadline,
    until_event,
)
from tests.postgres import fresh_schema, postgres_database

__all__ = ["postgres_database"]


async def _approval_with_card(url: str, card_id: str) -> asyncpg.Record | None:
    conn = await asyncpg.connect(url)
    try:
        return await conn.fetchrow("SELECT status FROM approvals WHERE card_id = $1", card_id)
    finally:
        await conn.close()


async def until_card_stored(url: str, card_id: str) -> None:
    """Wait for the approval request to know its card (polled every 20 ms, at most ``WAIT``)."""
    async with asyncio.timeout(WAIT):
        for _ in range(int(WAIT / 0.02) + 1):
            if await _approval_with_card(url, card_id) is not None:
                return
            await asyncio.sleep(0.02)


async def _stored(url: str, words: str) -> None:
    """Wait for a stored message holding ``words`` (polled every 20 ms, at most ``WAIT``)."""
    async with asyncio.timeout(WAIT):
        for _ in range(int(WAIT / 0.02) + 1):
            conn = await asyncpg.connect(url)
            try:
                bodies = [r["body"] for r in await conn.fetch("SELECT body FROM messages")]
            finally:
                await conn.close()
            if any(words in b for b in bodies):
                return
            await asyncio.sleep(0.02)


async def test_a_kill_between_card_and_click_loses_nothing_on_postgres(
    tmp_path: Path, postgres_database: str
) -> None:
    url = await fresh_schema(postgres_database)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    user = {"user_name": "Alice"}
    async with browser() as http:
        async with threadline(tmp_path, port, THREADLINE_DATABASE_URL=url) as first:
            await open_page(http, base)
            async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                async with http.post(
                    f"{base}/api/messages",
                    json={"text": "Plan a team lunch", "event_id": "event-pg-0001", **user},
                ) as resp:
                    assert resp.status == 202
                    thread_id = (await resp.json())["thread_id"]
                card = (await until_event(ws, card_in))["message"]
            await until_card_stored(url, card["id"])
            first.send_signal(signal.SIGKILL)
            await first.wait()

        async with threadline(tmp_path, port, THREADLINE_DATABASE_URL=url):
            approve = next(b for b in card["buttons"] if b["label"] == "Approve")["action_id"]
            async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                async with http.post(
                    f"{base}/api/actions",
                    json={"thread_id": thread_id, "action_id": approve, **user},
                ) as resp:
                    assert (await resp.json())["note"] == "Approved."
                await until_event(  # the final answer: its Stop button gone, the run over
                    ws,
                    lambda e: (
                        e.get("type") == "message"
                        and "script ends" in e["message"]["text"]
                        and not e["message"]["buttons"]
                    ),
                )
            async with http.get(f"{base}/api/threads/{thread_id}") as resp:
                shown = "\n".join(m["text"] for m in (await resp.json())["messages"])
            await _stored(url, "script ends")  # the answer kept, not only shown
    assert "script ends" in shown and "command ran" in shown, shown

    conn = await asyncpg.connect(url)
    try:
        status = await conn.fetchval("SELECT status FROM approvals WHERE card_id = $1", card["id"])
        events = [r["event"] for r in await conn.fetch("SELECT event FROM audit ORDER BY seq")]
        bodies = [
            r["body"] for r in await conn.fetch("SELECT body FROM messages ORDER BY key, seq")
        ]
        version = await conn.fetchval("SELECT max(version) FROM schema_migrations")
    finally:
        await conn.close()
    assert status == "approved" and events == ["requested", "approved"]
    assert any("Plan a team lunch" in b for b in bodies) and any("script ends" in b for b in bodies)
    assert version == migrations()[-1][0]
    assert not (tmp_path / "data" / "threadline.sqlite3").exists()


def _environment(tmp_path: Path, **settings: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "SLACK_", "DISCORD_", "THREADLINE_"))
    }
    return env | {
        "THREADLINE_DATA_DIR": str(tmp_path / "data"),
        "THREADLINE_HTTP_PORT": str(free_port()),
        **settings,
    }


async def _threadline(tmp_path: Path, command: str, **settings: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        command,
        cwd=tmp_path,
        env=_environment(tmp_path, **settings),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(WAIT):
        out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_an_unreachable_database_stops_the_program_at_once_with_one_clear_line(
    tmp_path: Path,
) -> None:
    closed = free_port()  # nothing listens there
    url = f"postgresql://bot:pg-secret-3141@127.0.0.1:{closed}/threadline"
    code, out, err = await _threadline(tmp_path, "run", THREADLINE_DATABASE_URL=url)
    assert code == 1
    assert err.strip().splitlines()[-1] == (
        f"threadline: the store is unusable: cannot use PostgreSQL at postgresql://bot@127.0.0.1:{closed}"
        "/threadline: the connection was refused (is PostgreSQL running, and on this port?)"
    )
    assert "Traceback" not in err and "Threadline playground:" not in out
    assert "pg-secret-3141" not in out + err


async def test_a_database_url_that_is_not_postgresql_is_refused_by_name(tmp_path: Path) -> None:
    code, _, err = await _threadline(
        tmp_path, "run", THREADLINE_DATABASE_URL="mysql://u:pw-secret-9@h/db"
    )
    assert code == 2
    assert err.strip() == (
        "threadline: invalid configuration: THREADLINE_DATABASE_URL: must be a URL "
        "starting with postgresql://"
    )


async def test_doctor_says_whether_the_database_answers_and_its_schema_version(
    tmp_path: Path, postgres_database: str
) -> None:
    url = await fresh_schema(postgres_database)
    newest = migrations()[-1][0]
    code, out, _ = await _threadline(tmp_path, "doctor", THREADLINE_DATABASE_URL=url)
    line = next(x for x in out.splitlines() if "store:" in x)
    assert code == 0, out
    assert line.startswith("[ok  ] store: PostgreSQL ") and f"/{postgres_database} answers" in line
    assert line.endswith(f"no tables yet: `threadline run` creates them (schema version {newest})")

    async with threadline(tmp_path, free_port(), THREADLINE_DATABASE_URL=url):
        pass  # start-up creates the tables
    code, out, _ = await _threadline(tmp_path, "doctor", THREADLINE_DATABASE_URL=url)
    assert f"schema version {newest} (current)" in out and code == 0, out
    assert (
        "[ok  ] workers: any number may share this database; a worker that dies is known gone"
        " when its connection ends, and its threads are taken over at another's next look,"
        " every 1 s (THREADLINE_WORKER_POLL_S); a thread's lease lasts 10 s" in out
    )
    assert (
        "a hung worker's threads are taken over within 11 s" in out
        and "over the bot's own" not in out
    )

    code, out, _ = await _threadline(tmp_path, "doctor", THREADLINE_DATABASE_URL=url + "&jit=on")
    line = next(x for x in out.splitlines() if "store:" in x)
    assert (
        "answers (the URL sets jit on, over the bot's own); schema version" in line and code == 0
    ), line
    code, out, _ = await _threadline(tmp_path, "doctor", THREADLINE_DATABASE_URL=url + "&jit=maybe")
    line = next(x for x in out.splitlines() if "store:" in x)
    assert (
        line.startswith("[FAIL] store: cannot use PostgreSQL at ") and '"jit"' in line and code == 1
    ), line

    code, out, _ = await _threadline(
        tmp_path, "doctor", THREADLINE_DATABASE_URL=url, THREADLINE_LEASE_TTL_S="20"
    )
    line = next(x for x in out.splitlines() if "workers:" in x)
    assert line.startswith("[--  ]") and line.endswith(
        "lower THREADLINE_LEASE_TTL_S to resume sooner"
    ), line

    closed = free_port()
    secret = f"postgresql://bot:pg-secret-2718@127.0.0.1:{closed}/threadline"
    code, out, err = await _threadline(tmp_path, "doctor", THREADLINE_DATABASE_URL=secret)
    assert code == 1
    assert (
        f"[FAIL] store: cannot use PostgreSQL at postgresql://bot@127.0.0.1:{closed}/threadline: "
        "the connection was refused" in out
    )
    assert "pg-secret-2718" not in out + err
