"""A kill right after the playground answered 202 to a person's message: the core kept the
message (with its delivery id) before the 202, so the restarted program answers it."""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.e2e.test_process_restart import browser, free_port, open_page
from tests.fakes.openai_server import Delay, FakeOpenAI, Reply
from tests.reliability.test_random_kills import Person, program
from tests.reliability.world import poll, respond, unanswered


@pytest.mark.timeout(60)
async def test_a_message_accepted_just_before_a_kill_is_answered_after_the_restart(
    tmp_path: Path,
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    data = tmp_path / "data"
    hold = asyncio.Event()
    async with FakeOpenAI(default=respond) as fake, browser() as http:
        fake.push(Delay(Reply("never sent"), until=hold))  # the first answer never comes
        env = {
            "OPENAI_BASE_URL": fake.base_url,
            "OPENAI_API_KEY": "sk-test",
            "THREADLINE_DATA_DIR": str(data),
            "THREADLINE_HTTP_PORT": str(port),
        }
        person = Person(http, base, random.Random(1))
        try:
            async with program(tmp_path, port, env) as first:
                await open_page(http, base)
                thread_id = await person.write("How is the week going?", None)
                first.send_signal(signal.SIGKILL)  # right after the 202
                await first.wait()
            with contextlib.closing(sqlite3.connect(data / "threadline.sqlite3")) as db:
                kept = db.execute(
                    "SELECT COUNT(*) FROM deliveries WHERE event_id = 'event-000001'"
                ).fetchone()
            assert kept == (1,), "the 202 came before the core kept the message"
            fake.script.clear()  # the held answer, if the killed program never asked for it
            async with program(tmp_path, port, env):
                await open_page(http, base)
                answered = await poll(_answered(person, thread_id), 15)
                shown = [
                    (m["bot"], m["text"][:60]) for m in (await person.thread(thread_id))["messages"]
                ]
        finally:
            hold.set()
    assert answered, f"the accepted message was never answered: {shown}"


def _answered(person: Person, thread_id: str) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return not unanswered(await person.thread(thread_id))

    return check
