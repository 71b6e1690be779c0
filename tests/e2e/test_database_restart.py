"""Two real ``threadline run`` workers on a PostgreSQL server of the test's own, stopped and
started again while runs are in flight and a message arrives: ``/readyz`` says not ready while
the database is down and ready after; the workers reconnect; every run finishes once and the
message that arrived meanwhile is answered (nothing lost, nothing twice)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path

import aiohttp

from bot.present.presenter import WORKING
from bot.thread.recovery import RESUMING
from tests.e2e.workers import WAIT, Worker, worker
from tests.fakes.openai_server import Delay, FakeOpenAI, Reply
from tests.fakes.slack import MENTION, FakeSlack, Message
from tests.postgres_private import PrivateServer, private_postgres

__all__ = ["private_postgres"]

CHANNEL = "CGENERAL"
THREADS = 8


async def readiness(http: aiohttp.ClientSession, running: Worker) -> tuple[int, dict[str, object]]:
    async with http.get(f"http://127.0.0.1:{running.port}/readyz") as response:
        return response.status, await response.json()


async def until_ready(
    http: aiohttp.ClientSession, running: Worker, ready: Callable[[int], bool]
) -> dict[str, object]:
    """Ask ``/readyz`` every 50 ms until its status satisfies ``ready`` (at most ``WAIT``)."""
    async with asyncio.timeout(WAIT):
        for _ in range(int(WAIT / 0.05) + 1):
            status, body = await readiness(http, running)
            if ready(status):
                return body
            await asyncio.sleep(0.05)
    raise TimeoutError("/readyz never said so")


def answered(messages: list[Message]) -> bool:
    """Whether a whole answer has been shown (a reply still streaming reads ``Answer`` alone)."""
    return any(re.fullmatch(r"Answer .+\.", m.shown) for m in messages)


def settled(messages: list[Message]) -> bool:
    """A whole answer shown, and the run's "Working…" message (Stop beside a native stream)
    gone with the run."""
    return answered(messages) and not any(m.shown == WORKING for m in messages)


async def test_a_database_restart_under_load_loses_nothing_and_readyz_follows_it(
    tmp_path: Path, private_postgres: PrivateServer
) -> None:
    url = private_postgres.url
    slack = FakeSlack()
    await slack.start()
    gate = asyncio.Event()
    try:
        async with FakeOpenAI() as model, aiohttp.ClientSession() as http:
            model.push(*(Delay(Reply(f"Answer {n}."), until=gate) for n in range(THREADS)))
            model.push(Reply("Answer while it was down."))
            try:
                async with (
                    worker(
                        tmp_path, "b", url, slack, model.base_url, THREADLINE_LEASE_TTL_S="5"
                    ) as b,
                    worker(
                        tmp_path, "a", url, slack, model.base_url, THREADLINE_LEASE_TTL_S="5"
                    ) as a,
                ):
                    roots = [
                        await slack.say("UADA", CHANNEL, f"{MENTION} question {n}")
                        for n in range(THREADS)
                    ]
                    await model.wait_for_requests(
                        THREADS, within=WAIT
                    )  # every run's model call in flight

                    await private_postgres.stop()
                    for running in (a, b):
                        body = await until_ready(http, running, lambda status: status == 503)
                        assert "does not answer" in str(body["waiting"]), body
                    late = await slack.say(
                        "UGRACE", CHANNEL, f"{MENTION} are you there?"
                    )  # while it is down
                    gate.set()  # the model answers; the runs' writes wait for the database
                    await private_postgres.start()

                    for running in (a, b):
                        assert (await until_ready(http, running, lambda status: status == 200))[
                            "ready"
                        ] is True
                    everything = [*roots, late]
                    await slack.wait_for(  # nine threads in one channel: a post a second
                        lambda: all(settled(slack.replies(CHANNEL, r.ts)) for r in everything),
                        2 * WAIT,
                    )
                    replies = {
                        r.ts: [m.shown for m in slack.replies(CHANNEL, r.ts)] for r in everything
                    }
                    output = a.output + b.output
            finally:
                gate.set()
    finally:
        await slack.stop()
    assert len(model.requests) == THREADS + 1  # no run was asked again
    for root in roots:
        assert (
            sum(f"Answer {m}." in text for text in replies[root.ts] for m in range(THREADS)) == 1
        ), replies
        assert not any(RESUMING in text for text in replies[root.ts])
    assert replies[late.ts] == ["Answer while it was down."]
    assert "answers again" in output and "Traceback" not in output
