"""Time from a person's sign-in callback to the tool call it resumed: two real ``threadline
run`` workers on one PostgreSQL database and one fake Slack, a per-person MCP server behind a
fake authorization server (tests/fakes). Each round a new person mentions the bot; the run asks
them to sign in (the link an ephemeral note); the bench is their browser: it follows the link,
and the authorization server's redirect is sent either to the worker whose call waits
(``same``) or to the other one (``other``: the callback handed over through the database).

Figures: callback → the callback's page answered, and callback → the MCP server got the call
the run waited to make (and the answer shown in the thread), per target, p50 and p95.

Run: ``python -m bench.mcp_sign_in [--rounds 10]`` (PostgreSQL at THREADLINE_TEST_POSTGRES or
127.0.0.1:5432)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import secrets
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp

from bench.stats import POSTGRES, admin, p95
from tests.e2e.workers import sql, worker
from tests.fakes.mcp_http import FakeMcpHttp
from tests.fakes.oauth_server import FakeOAuthServer
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply
from tests.fakes.slack import MENTION, FakeSlack
from tests.fakes.slack.state import User

CHANNEL = "CGENERAL"
TOKEN = "bench-per-person-token"
BALANCER = "http://balancer.test"
LINK = re.compile(r"(http://127\.0\.0\.1:\d+/authorize\?[^|>\s)]+)")
WAIT_S = 30.0


async def measure(url: str, rounds: int) -> dict[str, list[tuple[float, float, float]]]:
    """Per target (``same``, ``other``): (page, call made, answer shown) in seconds a round."""
    figures: dict[str, list[tuple[float, float, float]]] = {"same": [], "other": []}
    slack = FakeSlack()
    await slack.start()
    try:
        with tempfile.TemporaryDirectory() as home:
            async with (
                FakeOAuthServer(token=TOKEN) as oauth,
                FakeMcpHttp(token=TOKEN, issuer=oauth.issuer) as mcp,
                FakeOpenAI() as model,
                aiohttp.ClientSession() as http,
            ):
                await asyncio.to_thread(
                    Path(home, "threadline.toml").write_text,
                    f'[mcp_servers.docs]\nurl = "{mcp.url}"\ntimeout_s = 20\n\n'
                    '[mcp_servers.docs.oauth]\nsign_in = "per_person"\n',
                )
                public = {"THREADLINE_PUBLIC_URL": BALANCER, "THREADLINE_WORKER_POLL_S": "1"}
                async with (
                    worker(Path(home), "b", url, slack, model.base_url, **public) as b,
                    worker(Path(home), "a", url, slack, model.base_url, **public) as a,
                ):
                    ports = {"a": a.port, "b": b.port}
                    for n in range(rounds * 2):
                        target = "same" if n % 2 == 0 else "other"
                        got = await one_round(n, target, slack, mcp, model, http, url, ports)
                        figures[target].append(got)
                        print(
                            f"round {n + 1} ({target}): page {got[0] * 1000:.0f} ms, call"
                            f" {got[1] * 1000:.0f} ms, answer {got[2] * 1000:.0f} ms"
                        )
    finally:
        await slack.stop()
    return figures


async def one_round(
    n: int,
    target: str,
    slack: FakeSlack,
    mcp: FakeMcpHttp,
    model: FakeOpenAI,
    http: aiohttp.ClientSession,
    url: str,
    ports: dict[str, int],
) -> tuple[float, float, float]:
    person = f"UBENCH{n}"
    slack.workspace.add_user(User(person, f"person{n}", f"Person {n}", f"Person {n}"))
    slack.workspace.channels[CHANNEL].members.add(person)
    text = f"echo {n}"
    model.push(
        Reply(calls=[FakeCall("docs__sign_in", {})]),
        Reply(calls=[FakeCall("docs__echo", {"text": text})]),
        Reply(f"Echoed {n}."),
    )
    root = await slack.say(person, CHANNEL, f"{MENTION} echo something from docs")

    def link() -> str | None:
        found = [LINK.search(e) for e in slack.ephemerals(person)]
        return next((f.group(1) for f in found if f is not None), None)

    await slack.wait_for(lambda: link() is not None, WAIT_S)
    shown = link()
    assert shown is not None
    [lease] = await sql(url, "SELECT owner FROM leases WHERE key LIKE $1", f"%{root.ts}")
    holder = str(lease["owner"])
    to = holder if target == "same" else ("b" if holder == "a" else "a")
    async with http.get(shown.replace("&amp;", "&"), allow_redirects=False) as signing:
        back = signing.headers["Location"]
    callback = back.replace(BALANCER, f"http://127.0.0.1:{ports[to]}")
    clicked = time.monotonic()
    async with http.get(callback) as landed:
        said = await landed.text()
        assert landed.status == 200 and "Signed in" in said, said
    page = time.monotonic() - clicked
    await mcp.until(lambda: ("echo", {"text": text}) in mcp.behaviour.calls, WAIT_S)
    called = time.monotonic() - clicked

    def answered() -> bool:
        return any(f"Echoed {n}." in m.shown for m in slack.replies(CHANNEL, root.ts))

    await slack.wait_for(answered, WAIT_S)
    return page, called, time.monotonic() - clicked


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--postgres",
        default=POSTGRES,
    )
    parser.add_argument("--rounds", type=int, default=10, help="rounds per target")
    args = parser.parse_args()
    logging.getLogger("aiohttp").setLevel(logging.CRITICAL)
    asyncio.run(run(args))


async def run(args: argparse.Namespace) -> None:
    name = f"threadline_bench_{secrets.token_hex(4)}"
    await admin(args.postgres, f'CREATE DATABASE "{name}"')
    url = args.postgres.rsplit("/", 1)[0] + f"/{name}"
    try:
        figures = await measure(url, args.rounds)
    finally:
        await admin(args.postgres, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    print(f"sign-in callback, two workers on PostgreSQL, {os.cpu_count()} cores, ms p50/p95:")
    for target, rows in figures.items():
        columns = [[r[i] * 1000 for r in rows] for i in range(3)]
        said = ", ".join(
            f"{label} {statistics.median(c):.0f}/{p95(c):.0f}"
            for label, c in zip(("page", "call", "answer"), columns, strict=True)
        )
        where = "the worker whose call waits" if target == "same" else "the other worker"
        print(f"  callback to {where}: {said}")


if __name__ == "__main__":
    main()
