"""The real program with a per-person MCP server: ``threadline run`` offers the server's
``docs__sign_in`` (nobody has signed in yet), the playground thread shows a card without the
sign-in link, whose "Sign in…" shows the link to the run's person alone (another person's click
is refused without it), the run waits; the test is the person's browser: it opens the link, the fake
authorization server sends it back to the bot's own ``/mcp/oauth/callback``, and the run goes
on with the person's own connection. A callback with a state no sign-in waits for changes
nothing. The token never shows in the thread or the log.

Killed with SIGKILL (or stopped with SIGTERM) while the person signs in, the program started
again takes the link's callback: the code is exchanged there, and the run goes on from the call
that waited. A link nobody follows ends its call "not signed in" at its expiry, after a restart
too, and the run goes on by itself; a message meanwhile is told whose sign-in it waits for.

Two workers on PostgreSQL: the callback sent to the worker whose run does not wait is handed to
the one whose run does, and the call is made there once, with the person's token."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.infra.sealed import sealer
from bot.mcp.tokens import Vault
from bot.storage.sqlite.store import SqliteStore
from tests.e2e.playground import Playground, playground
from tests.e2e.test_process_restart import browser, free_port, open_page
from tests.e2e.workers import sql, worker
from tests.fakes.mcp_http import FakeMcpHttp
from tests.fakes.oauth_server import FakeOAuthServer
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply
from tests.fakes.slack import MENTION, FakeSlack
from tests.postgres import fresh_schema, postgres_database

__all__ = ["postgres_database"]

TOKEN = "per-person-token-that-must-not-show"
CHANNEL = "CGENERAL"
ALICE = {"user_name": "Alice"}
LINK = re.compile(r"\((http://127\.0\.0\.1:\d+/authorize\?[^)\s]+)\)")


@asynccontextmanager
async def docs_server(
    tmp_path: Path, *then: Reply, more: str = ""
) -> AsyncIterator[tuple[FakeOAuthServer, FakeMcpHttp, FakeOpenAI]]:
    """The world of a per-person sign-in: an authorization server issuing ``TOKEN``, the MCP
    server ``docs`` over HTTP that lets in only that token, and a model that calls
    ``docs__sign_in`` and then answers ``then``; ``tmp_path/threadline.toml`` gives the
    program ``docs`` with its sign-in per person (and ``more``, TOML lines for the server)."""
    async with (
        FakeOAuthServer(token=TOKEN) as oauth,
        FakeMcpHttp(token=TOKEN, issuer=oauth.issuer) as mcp,
        FakeOpenAI() as model,
    ):
        (tmp_path / "threadline.toml").write_text(
            f'[mcp_servers.docs]\nurl = "{mcp.url}"\ntimeout_s = 20\n{more}\n'
            '[mcp_servers.docs.oauth]\nsign_in = "per_person"\n'
        )
        model.push(Reply(calls=[FakeCall("docs__sign_in", {})]), *then)
        yield oauth, mcp, model


def sign_in_card(event: dict[str, Any]) -> bool:
    message = event.get("message") or {}
    return event.get("type") == "message" and any(
        b["action_id"].startswith("sign-in:") for b in message.get("buttons", [])
    )


async def click(http: aiohttp.ClientSession, base: str, event: dict[str, Any], who: str) -> str:
    """``who`` (the session of ``http``) presses "Sign in…" on the card: their private note."""
    message = event["message"]
    [button] = message["buttons"]
    body = {
        "thread_id": event["thread_id"],
        "action_id": button["action_id"],
        "message_id": message["id"],
        "user_name": who,
    }
    async with http.post(f"{base}/api/actions", json=body) as answer:
        assert answer.status == 200, await answer.text()
        return str((await answer.json())["note"])


def link_in(note: str) -> str:
    found = LINK.search(note)
    assert found is not None, note
    return found.group(1).replace("&amp;", "&")


async def followed(http: aiohttp.ClientSession, link: str) -> str:
    """The person's browser opens ``link``: the callback the authorization server sends it
    back to."""
    async with http.get(link, allow_redirects=False) as signing:
        assert signing.status in (302, 303)
        return signing.headers["Location"]


async def lands(http: aiohttp.ClientSession, callback: str) -> None:
    """The browser opens ``callback``: the page says the person is signed in."""
    async with http.get(callback) as landed:
        said = await landed.text()
        assert landed.status == 200 and "Signed in" in said, said


async def refused(http: aiohttp.ClientSession, callback: str) -> str:
    """The browser opens ``callback`` (used already, or one no sign-in waits for): refused;
    the page's words."""
    async with http.get(callback) as page:
        assert page.status == 400
        return await page.text()


async def stopped(play: Playground, stop: signal.Signals = signal.SIGTERM) -> bytes:
    """The page closed, the program stopped with ``stop``: what it wrote."""
    await play.ws.close()
    play.process.send_signal(stop)
    log, _ = await play.process.communicate()
    return log


async def kept(tmp_path: Path) -> tuple[list[tuple[str, bytes]], list[tuple[str, Any]]]:
    """The sign-ins kept for ``docs`` in the program's store: sealed as stored, and unsealed
    with their people."""
    data = tmp_path / "data"
    store = SqliteStore(data / "threadline.sqlite3")
    await store.open()
    try:
        return await store.sign_ins("docs"), await Vault(store, sealer(data, None)).people("docs")
    finally:
        await store.close()


async def test_a_person_signs_in_from_the_thread_and_the_run_goes_on(tmp_path: Path) -> None:
    echo = Reply(calls=[FakeCall("docs__echo", {"text": "after sign-in"})])
    async with (
        docs_server(tmp_path, echo, Reply("Echoed for Alice.")) as (oauth, mcp, fake),
        playground(tmp_path, fake) as play,
    ):
        http, base = play.http, play.base
        await play.say("Echo something from docs", "event-sign-1", ALICE)
        card = await play.until(sign_in_card)
        assert "Alice, docs needs you to sign in" in card["message"]["text"]
        assert "/authorize?" not in card["message"]["text"], "the thread shows no link"
        async with browser() as bob:  # another person's click: refused, no link
            await open_page(bob, base)
            not_bob = await click(bob, base, card, "Bob")
        assert not_bob.startswith("Only Alice can sign in here") and "/authorize?" not in not_bob
        note = await click(http, base, card, "Alice")
        assert "for you alone" in note
        link = link_in(note)

        # a callback that no sign-in waits for: a clear page, nothing changes
        forged = await refused(http, f"{base}/mcp/oauth/callback?code=x&state=forged")
        assert "not one being waited for" in forged
        assert not mcp.behaviour.calls

        # the person's browser: the authorization server sends it back to the bot
        back = await followed(http, link)
        assert back.startswith(f"{base}/mcp/oauth/callback?")
        clicked = time.monotonic()
        await lands(http, back)
        await mcp.until(lambda: ("echo", {"text": "after sign-in"}) in mcp.behaviour.calls, 30)
        resumed_s = time.monotonic() - clicked
        print(f"sign-in callback to the resumed tool call: {resumed_s * 1000:.0f} ms")
        await play.until("Echoed for Alice.")

        await refused(http, back)  # the same link again: already used, nothing changes
        async with http.get(f"{base}/metrics") as metrics:
            assert TOKEN not in await metrics.text()
        log = await stopped(play)
    assert TOKEN.encode() not in log
    sealed, people = await kept(tmp_path)
    assert len(sealed) == 1, "Alice's sign-in is kept, sealed"
    assert TOKEN.encode() not in sealed[0][1]
    # whoever's browser opened the link, the sign-in is the person's it was made for
    assert len(people) == 1 and people[0][0].startswith("playground:")
    assert oauth.token_requests, "the code was exchanged at the token endpoint"


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM])
async def test_a_restart_while_a_person_signs_in_loses_nothing(
    tmp_path: Path, stop: signal.Signals
) -> None:
    port = free_port()  # the links lead back to it, before and after the restart
    echo = Reply(calls=[FakeCall("docs__echo", {"text": "after the restart"})])
    async with (
        docs_server(tmp_path, echo, Reply("Echoed for Alice.")) as (oauth, mcp, fake),
        browser() as http,  # Alice's browser: her session cookie outlives the restart
    ):
        async with playground(tmp_path, fake, http=http, port=port) as first:
            thread_id = await first.say("Echo something from docs", "event-kill-1", ALICE)
            card = await first.until(sign_in_card)
            log = await stopped(first, stop)  # while Alice signs in

        async with playground(tmp_path, fake, http=http, port=port) as second:
            link = link_in(
                await click(http, second.base, card, "Alice")
            )  # kept, sealed, in its row
            back = await followed(http, link)
            await lands(http, back)
            await second.until("Echoed for Alice.")
            assert "used already" in await refused(http, back)  # used: nothing changes
            shown = "\n".join(m["text"] for m in await second.messages(thread_id))
            log += await stopped(second)
    assert mcp.behaviour.calls.count(("echo", {"text": "after the restart"})) == 1, shown
    assert len(oauth.token_requests) == 1, "the code was exchanged once, after the restart"
    assert "Echoed for Alice." in shown and TOKEN not in shown
    assert TOKEN.encode() not in log
    _, people = await kept(tmp_path)
    assert len(people) == 1 and people[0][0].startswith("playground:")


async def test_after_a_restart_an_expired_link_ends_the_call_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    port = free_port()
    async with (
        docs_server(tmp_path, Reply("You did not sign in."), more="form_timeout_s = 6\n") as (
            oauth,
            mcp,
            fake,
        ),
        browser() as http,
    ):
        async with playground(tmp_path, fake, http=http, port=port) as first:
            thread_id = await first.say("Sign me in to docs", "event-exp-1", ALICE)
            await first.until(sign_in_card)
            await stopped(first, signal.SIGKILL)  # while Alice does not sign in

        async with playground(tmp_path, fake, http=http, port=port) as second:
            await second.say("any news?", "event-exp-2", ALICE, thread_id)
            told = await second.until("signed in to docs")
            # the link's expiry: the run goes on by itself, without a new link
            await second.until("You did not sign in.")
            shown = [m["text"] for m in await second.messages(thread_id)]
            await stopped(second)
    assert "Alice has signed in to docs" in told["message"]["text"]
    assert "approval" not in told["message"]["text"]
    assert not any("/authorize?" in text for text in shown), shown
    database = tmp_path / "data" / "threadline.sqlite3"
    with contextlib.closing(sqlite3.connect(database)) as db:
        links = db.execute("SELECT used_at IS NOT NULL FROM mcp_sign_in_waits").fetchall()
    assert links == [(1,)], "one link, ended at its expiry: the call was not made again"
    assert not oauth.token_requests and not mcp.behaviour.calls
    [result] = [m["content"] for m in fake.requests[-1].messages if m["role"] == "tool"]
    assert "not signed in: Alice did not sign in to docs within 6 s" in result
    asked = json.dumps(fake.requests[-1].messages)
    assert "any news?" in asked, "the message sent meanwhile is read when the run goes on"


BALANCER = "http://balancer.test"
"""The bot's public address (``THREADLINE_PUBLIC_URL``): a load balancer in front of both
workers, which the test plays by sending the callback to the worker it chooses."""
SLACK_LINK = re.compile(r"(http://127\.0\.0\.1:\d+/authorize\?[^|>\s)]+)")


async def test_two_workers_the_callback_reaches_the_one_whose_run_does_not_wait(
    tmp_path: Path, postgres_database: str
) -> None:
    url = await fresh_schema(postgres_database)
    slack = FakeSlack()
    await slack.start()
    echo = Reply(calls=[FakeCall("docs__echo", {"text": "on worker a"})])
    try:
        async with (
            docs_server(tmp_path, echo, Reply("Echoed for Alice.")) as (oauth, mcp, model),
            browser() as http,
        ):
            public = {"THREADLINE_PUBLIC_URL": BALANCER}
            async with (
                worker(tmp_path, "b", url, slack, model.base_url, **public) as b,
                worker(tmp_path, "a", url, slack, model.base_url, **public) as a,  # gets events
            ):
                root = await slack.say("UADA", CHANNEL, f"{MENTION} echo something from docs")
                await slack.wait_for(lambda: any(SLACK_LINK.search(e) for e in notes(slack)), 30)
                [lease] = await sql(url, "SELECT owner FROM leases")
                assert lease["owner"] == "a", "a holds the run, which waits for Alice"
                found = SLACK_LINK.search(next(e for e in notes(slack) if SLACK_LINK.search(e)))
                assert found is not None
                back = await followed(http, found.group(1).replace("&amp;", "&"))
                assert back.startswith(f"{BALANCER}/mcp/oauth/callback?")
                to_b = back.replace(BALANCER, f"http://127.0.0.1:{b.port}")
                clicked = time.monotonic()
                await lands(http, to_b)
                answered_s = time.monotonic() - clicked
                await slack.wait_for(lambda: "Echoed for Alice." in replied(slack, root.ts), 30)
                called_s = time.monotonic() - clicked
                [wait] = await sql(url, "SELECT owner, taken_at, handed FROM mcp_sign_in_waits")
                await refused(http, to_b)
            logs = a.output + b.output
    finally:
        await slack.stop()
    print(
        f"callback on b to its page: {answered_s * 1000:.0f} ms; to the answer: {called_s * 1000:.0f} ms"
    )
    assert mcp.behaviour.calls.count(("echo", {"text": "on worker a"})) == 1
    assert len(oauth.token_requests) == 1, "the code was exchanged once"
    assert wait["owner"] == "a" and wait["taken_at"] is not None, "a took the handed callback"
    assert TOKEN not in logs and TOKEN not in replied(slack, root.ts)


def notes(slack: FakeSlack) -> list[str]:
    """What Alice is shown: her notes, and the channel's messages."""
    return slack.ephemerals("UADA") + [m.shown for m in slack.workspace.messages.values()]


def replied(slack: FakeSlack, root_ts: str) -> str:
    return "\n".join(m.shown for m in slack.replies(CHANNEL, root_ts) if not m.deleted)
