"""Two real ``threadline run`` workers on one PostgreSQL database and one fake Slack; the worker
holding a run is SIGKILLed:

- mid-run (its model call in flight): the other worker takes the thread over, knowing the killed
  one gone from its connection's end, long before its lease would expire, and answers, once,
  "picking up where I left off";
- mid-approval (the card shown): the click reaches the surviving worker, the run resumes there,
  and the tool's side effect happens exactly once;
- mid-schedule (the scheduled prompt's turn started): the prompt runs once, on the other worker.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from bot.thread.recovery import RESUMING
from tests.e2e.workers import TTL_S, WAIT, sql, until_rows, worker
from tests.fakes.mcp_server import stdio_command
from tests.fakes.openai_server import Delay, FakeCall, FakeOpenAI, Reply
from tests.fakes.slack import MENTION, FakeSlack
from tests.postgres import fresh_schema, postgres_database

__all__ = ["postgres_database"]

CHANNEL = "CGENERAL"


@asynccontextmanager
async def release(gate: asyncio.Event) -> AsyncIterator[None]:
    """Let a held model call go at the end (the fake model's server waits for it to stop)."""
    try:
        yield
    finally:
        gate.set()


def shown(slack: FakeSlack, root_ts: str) -> str:
    return "\n".join(m.shown for m in slack.replies(CHANNEL, root_ts) if not m.deleted)


async def test_a_worker_killed_mid_run_is_taken_over_once_within_the_lease_time(
    tmp_path: Path, postgres_database: str
) -> None:
    url = await fresh_schema(postgres_database)
    slack = FakeSlack()
    await slack.start()
    gate = asyncio.Event()
    try:
        async with FakeOpenAI() as model:
            model.push(
                Delay(Reply("never sent"), until=gate), Reply("The incident came from a full disk.")
            )
            async with (
                release(gate),
                worker(tmp_path, "b", url, slack, model.base_url),
                worker(tmp_path, "a", url, slack, model.base_url) as a,
            ):
                root = await slack.say("UADA", CHANNEL, f"{MENTION} summarise the incident")
                await model.wait_for_requests(1, within=WAIT)  # a's model call, held
                [lease] = await sql(url, "SELECT owner FROM leases")
                assert lease["owner"] == "a"
                await a.kill()
                killed = time.monotonic()
                await slack.wait_for(lambda: "full disk" in shown(slack, root.ts), WAIT)
                took = time.monotonic() - killed
                await model.wait_for_requests(2, within=WAIT)
                [state] = await until_rows(url, "SELECT state FROM sessions WHERE state = 'idle'")
            text = shown(slack, root.ts)
            assert len(model.requests) == 2  # a's, cut off, and b's: not picked up twice
    finally:
        await slack.stop()
    assert took < TTL_S + 3.0, took  # the lease expires, then b's next poll (0.2 s) takes over
    assert text.count(RESUMING) == 1 and text.count("full disk") == 1, text


LONG_TTL_S = "120"
"""A lease that cannot expire within the test: a takeover is by the killed worker's presence."""


async def test_a_worker_killed_mid_answer_is_known_gone_by_its_connection_not_its_lease(
    tmp_path: Path, postgres_database: str
) -> None:
    url = await fresh_schema(postgres_database)
    slack = FakeSlack()
    await slack.start()
    gate = asyncio.Event()
    slow = {"THREADLINE_LEASE_TTL_S": LONG_TTL_S, "THREADLINE_WORKER_POLL_S": "1"}
    try:
        async with FakeOpenAI() as model:
            model.push(
                Delay(Reply("never sent"), until=gate), Reply("The incident came from a full disk.")
            )
            async with (
                release(gate),
                worker(tmp_path, "b", url, slack, model.base_url, **slow),
                worker(tmp_path, "a", url, slack, model.base_url, **slow) as a,
            ):
                root = await slack.say("UADA", CHANNEL, f"{MENTION} summarise the incident")
                await model.wait_for_requests(1, within=WAIT)  # a's model call, held
                [lease] = await sql(url, "SELECT owner FROM leases")
                assert lease["owner"] == "a"
                await a.kill()
                killed = time.monotonic()
                await slack.wait_for(lambda: "full disk" in shown(slack, root.ts), WAIT)
                took = time.monotonic() - killed
                [state] = await until_rows(url, "SELECT state FROM sessions WHERE state = 'idle'")
            text = shown(slack, root.ts)
            assert len(model.requests) == 2
    finally:
        await slack.stop()
    # a's lease had two minutes left: b knew a was gone when its connection ended, at b's next
    # poll (1 s, the default). The bound is for a loaded machine; bench/takeover.py has figures.
    assert took < 10.0, took
    assert text.count(RESUMING) == 1 and text.count("full disk") == 1, text


async def test_a_worker_killed_with_a_card_shown_the_click_resumes_on_the_other_once(
    tmp_path: Path, postgres_database: str
) -> None:
    url = await fresh_schema(postgres_database)
    effects = tmp_path / "effects"  # the tool's side effects, one line each, from either worker
    command = stdio_command("--effects", str(effects))
    (tmp_path / "threadline.toml").write_text(
        f"[mcp_servers.tickets]\ncommand = {json.dumps(command[0])}\nargs = {json.dumps(command[1:])}\ntimeout_s = 20\n"
    )
    slack = FakeSlack()
    await slack.start()
    try:
        async with FakeOpenAI() as model:
            model.push(
                Reply(calls=[FakeCall("tickets__close_ticket", {"id": "T-1"})]),
                Reply("Closed T-1."),
            )
            async with (
                worker(tmp_path, "b", url, slack, model.base_url),
                worker(tmp_path, "a", url, slack, model.base_url) as a,
            ):
                root = await slack.say("UADA", CHANNEL, f"{MENTION} close T-1")
                await slack.wait_for(
                    lambda: any(
                        b["text"]["text"] == "Approve"
                        for m in slack.replies(CHANNEL, root.ts)
                        for b in m.buttons
                    ),
                    WAIT,
                )
                card = next(m for m in slack.replies(CHANNEL, root.ts) if m.buttons)
                await until_rows(url, "SELECT 1 FROM approvals WHERE card_id = $1", card.ts)
                await a.kill()
                await slack.wait_for(
                    lambda: len(slack.socket.connections) == 1, WAIT
                )  # b's link only

                click = await slack.click("UADA", card, "Approve")  # reaches b
                assert click.acked_in_time
                await slack.wait_for(lambda: "Closed T-1." in shown(slack, root.ts), WAIT)
                await until_rows(url, "SELECT 1 FROM sessions WHERE state = 'idle'")
            text = shown(slack, root.ts)
            assert len(model.requests) == 2
        [decision] = await sql(url, "SELECT status, decided_by_id FROM approvals")
    finally:
        await slack.stop()
    assert effects.read_text() == "closed T-1\n"  # exactly once
    assert decision["status"] == "approved" and decision["decided_by_id"] == "slack:UADA"
    assert text.count("Closed T-1.") == 1 and RESUMING not in text, text
    assert not card.buttons  # the card says who decided; nothing left to click


async def test_a_worker_killed_while_its_scheduled_prompt_runs_leaves_it_to_the_other_once(
    tmp_path: Path, postgres_database: str
) -> None:
    url = await fresh_schema(postgres_database)
    slack = FakeSlack()
    await slack.start()
    gate = asyncio.Event()
    try:
        async with FakeOpenAI() as model:
            model.push(
                Reply(
                    calls=[
                        FakeCall(
                            "schedule_prompt",
                            {"prompt": "Say the build is green", "when": "in 2 seconds"},
                        )
                    ]
                ),
                Reply("I'll say it in two seconds."),
                Delay(
                    Reply("never sent"), until=gate
                ),  # the scheduled turn, on whichever claims it
                Reply("The build is green."),
            )
            async with (
                release(gate),
                worker(tmp_path, "b", url, slack, model.base_url) as b,
                worker(tmp_path, "a", url, slack, model.base_url) as a,
            ):
                root = await slack.say(
                    "UADA", CHANNEL, f"{MENTION} in 2 seconds, say the build is green"
                )
                await slack.wait_for(lambda: "two seconds" in shown(slack, root.ts), WAIT)
                await model.wait_for_requests(
                    3, within=WAIT
                )  # the scheduled turn's model call, held
                [lease] = await sql(url, "SELECT owner FROM leases WHERE owner <> ''")
                claimed, other = (a, b) if lease["owner"] == "a" else (b, a)
                await claimed.kill()
                await slack.wait_for(lambda: "The build is green." in shown(slack, root.ts), WAIT)
                await until_rows(url, "SELECT 1 FROM sessions WHERE state = 'idle'")
                left = await sql(url, "SELECT id FROM schedules")
                bodies = [
                    r["body"] for r in await sql(url, "SELECT body FROM messages ORDER BY seq")
                ]
                assert other.proc.returncode is None  # the answer came from the other worker
            text = shown(slack, root.ts)
            assert len(model.requests) == 4
    finally:
        await slack.stop()
    assert left == []  # the one-off was claimed: no later wake runs it again
    assert sum("Say the build is green" in b and "scheduled by" in b for b in bodies) == 1
    assert text.count("The build is green.") == 1, text
    assert (
        text.count("⏰ Scheduled by Ada") <= 1
    )  # shown by the killed worker if its first post landed
    assert text.count(RESUMING) == 1
