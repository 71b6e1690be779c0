"""A kill right after an approval click: the decision is in the database, but the card was not
updated and the paused run was not resumed before the process died. The database is brought to
exactly that state (the click's one conditional update, made while the program is down), then
the program starts again."""

from __future__ import annotations

import contextlib
import random
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from tests.e2e.test_process_restart import (
    browser,
    card_in,
    card_recorded,
    free_port,
    open_page,
    until_event,
)
from tests.fakes.openai_server import FakeOpenAI
from tests.reliability.test_random_kills import NEVER, Person, program
from tests.reliability.world import marker_counts, poll, respond
from tests.sandboxing import sandbox_runner


@pytest.mark.timeout(90)
async def test_a_kill_right_after_a_click_resumes_the_approved_run(tmp_path: Path) -> None:
    sandbox_runner()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    data = tmp_path / "data"
    database = data / "threadline.sqlite3"
    async with FakeOpenAI(default=respond) as fake, browser() as http:
        env = {
            "OPENAI_BASE_URL": fake.base_url,
            "OPENAI_API_KEY": "sk-test",
            "THREADLINE_SANDBOX": "bwrap",
            "THREADLINE_DATA_DIR": str(data),
            "THREADLINE_HTTP_PORT": str(port),
        }
        person = Person(http, base, random.Random(1))
        async with program(tmp_path, port, env) as proc:
            await open_page(http, base)
            async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                thread_id = await person.write("Please log cmd-0badc0de", None)
                card = (await until_event(ws, card_in))["message"]
            assert await poll(lambda: card_recorded(database, card["id"]), 10)
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        with contextlib.closing(sqlite3.connect(database)) as db, db:
            changed = db.execute(
                "UPDATE approvals SET status = 'approved', decided_by_id = requester_id,"
                " decided_by_name = requester_name, decided_at = ? WHERE card_id = ? AND status = 'pending'",
                (time.time(), card["id"]),
            ).rowcount
        assert changed == 1
        (tmp_path / "threadline.toml").write_text(NEVER)
        async with program(tmp_path, port, env):
            await open_page(http, base)
            ran = await poll(lambda: marker_counts(data)["0badc0de"] == 1, 10)
            shown = next(
                m for m in (await person.thread(thread_id))["messages"] if m["id"] == card["id"]
            )
    assert ran, "the approved command never ran"
    assert shown["buttons"] == [], "the decided card still shows its buttons"
