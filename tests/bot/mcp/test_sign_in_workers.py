"""Per-person sign-ins with two workers on one PostgreSQL database (two cores and their MCP
servers, each with its own pool, as two processes would have); the world is faked as in
:mod:`tests.bot.mcp.test_sign_in_threads`. The sign-in's callback reaches the worker whose run
does not wait for it (a load balancer):

- the worker whose call waits is alive: the callback is handed to it, it takes it once and its
  call goes on with the person's token; the page says signed in;
- that worker was killed: the worker that got the callback takes the thread over, exchanges the
  code and resumes the run, which makes the call once.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from bot.api.inbound import Inbound
from bot.config import Settings
from bot.core import Core
from bot.infra.clock import SystemClock
from bot.mcp.servers import McpServers
from bot.mcp.sign_in_desk import DONE, Landing
from bot.storage.postgres.store import PostgresStore
from bot.tools import ToolRegistry
from bot.tools.builtin import builtin_tools
from tests.bot.mcp.test_sign_in_threads import (
    ALICE,
    KEY,
    WAIT,
    Thread,
    World,
    follow,
    link_in,
    world,
)
from tests.bot.test_workers import kill
from tests.fakes.scripted_model import ScriptedModel, call, step, text
from tests.postgres import fresh_schema, postgres_database

__all__ = ["postgres_database"]

ANSWERS = (step(call("docs__echo", {"text": "hi"})), text("Done for Alice."))
"""What the model does once Alice signed in."""


class Worker:
    """One worker: its core on the shared database, its MCP servers."""

    def __init__(
        self, name: str, url: str, settings: Settings, model: ScriptedModel, poll_s: float = 0.1
    ) -> None:
        settings = settings.model_copy(
            update={"worker_id": name, "lease_ttl_s": 2.0, "worker_poll_s": poll_s}
        )
        tools = ToolRegistry(builtin_tools())
        self.core = Core(settings, PostgresStore(url, pool_size=4), model, tools, SystemClock())
        self.thread: Thread | None = None
        self.mcp = McpServers(
            settings,
            self.core.clock,
            asking=self.core.asking,
            waits=self.core.store,
            resume=self.core.signed_in,
            keep=self.core.store,
            expire=self.core.decisions.sign_in_expires,
            peers=self.core.peers,
            take_over=self.core.sign_in_take_over,
        )
        self.mcp.install(self.core.tools)

    async def start(self, thread: Thread) -> None:
        self.core.register_surfaces("slack:", lambda key: thread, lambda key: "slack:T1:C1")
        await self.core.start()
        await self.mcp.start()

    async def aclose(self) -> None:
        await self.core.aclose()
        await self.mcp.aclose()


async def signing_in(
    url: str, w: World, poll_s: float = 0.1
) -> tuple[Worker, Worker, Thread, asyncio.Future[None], dict[str, str]]:
    """Workers a and b started; Alice's run on a waits for her sign-in; her click on the card
    lands on b (the link is read from the wait's row) and her browser follows it: what the
    authorization server sends back."""
    thread = w.thread
    a = Worker("a", url, w.settings, w.model, poll_s)
    b = Worker("b", url, w.settings, w.model, poll_s)
    await a.start(thread)
    await b.start(thread)
    asked = asyncio.ensure_future(a.core.handle(Inbound(KEY, ALICE, "echo hi", "e1"), thread))
    await thread.until(lambda: bool(thread.cards()))
    card = thread.cards()[-1]
    [button] = card.first_buttons
    note = await b.core.on_action(button.action_id, ALICE, thread, card.id)
    query = await follow(link_in(note or ""))
    return a, b, thread, asked, query


async def rows(url: str, query: str) -> list[Any]:
    conn = await asyncpg.connect(url)
    try:
        return list(await conn.fetch(query))
    finally:
        await conn.close()


@pytest.mark.parametrize("reached", ["a", "b"])
async def test_a_callback_on_either_worker_wakes_the_waiting_call_at_once(
    postgres_database: str, tmp_path: Path, reached: str
) -> None:
    """The workers look at their rows only every minute here: the call goes on because the
    callback wakes it (on a, at once; on b, through the nudge), not because a poll came."""
    url = await fresh_schema(postgres_database)
    async with world(tmp_path, *ANSWERS) as w:
        mcp = w.mcp
        a, b, thread, asked, query = await signing_in(url, w, poll_s=60.0)
        landed = await (a if reached == "a" else b).mcp.sign_ins.arrived(query)
        await asyncio.wait_for(asked, WAIT)
        [wait] = await rows(url, "SELECT owner, taken_at FROM mcp_sign_in_waits")
        await a.aclose()
        await b.aclose()
    assert landed == Landing(200, DONE)
    assert mcp.called_with == [("echo", "token-1")], "called once, on a, with Alice's token"
    assert wait["owner"] == "a" and (wait["taken_at"] is not None) == (reached == "b")


async def test_a_callback_on_the_other_worker_is_handed_to_the_waiting_call(
    postgres_database: str, tmp_path: Path
) -> None:
    url = await fresh_schema(postgres_database)
    async with world(tmp_path, *ANSWERS) as w:
        oauth, mcp = w.oauth, w.mcp
        a, b, thread, asked, query = await signing_in(url, w)
        landed = await b.mcp.sign_ins.arrived(query)  # the worker whose run does not wait
        await asyncio.wait_for(asked, WAIT)
        again = await b.mcp.sign_ins.arrived(query)
        [wait] = await rows(url, "SELECT owner, handed, taken_at, used_at FROM mcp_sign_in_waits")
        await a.aclose()
        await b.aclose()
    assert landed == Landing(200, DONE)
    assert again.status == 400 and "used already" in again.text
    assert mcp.called_with == [("echo", "token-1")], "called once, on a, with Alice's token"
    assert "Done for Alice." in thread.visible_text()
    codes = [r for r in oauth.token_requests if r["grant_type"] == "authorization_code"]
    assert len(codes) == 1, "the code was exchanged once"
    assert wait["owner"] == "a" and wait["taken_at"] is not None
    assert query["code"] not in wait["handed"], "the code is handed sealed"


async def test_a_callback_for_a_killed_worker_is_finished_by_the_one_it_reaches(
    postgres_database: str, tmp_path: Path
) -> None:
    url = await fresh_schema(postgres_database)
    async with world(tmp_path, *ANSWERS) as w:
        oauth, mcp = w.oauth, w.mcp
        a, b, thread, asked, query = await signing_in(url, w)
        await kill(a.core)  # while Alice signs in
        asked.cancel()
        await asyncio.gather(asked, return_exceptions=True)
        landed = await b.mcp.sign_ins.arrived(query)
        await thread.until(lambda: "Done for Alice." in thread.visible_text())
        await b.core.wait_idle()
        await b.aclose()
        await a.mcp.aclose()
    assert landed == Landing(200, DONE)
    assert mcp.called_with == [("echo", "token-1")], "called once, on b, with Alice's token"
    codes = [r for r in oauth.token_requests if r["grant_type"] == "authorization_code"]
    assert len(codes) == 1
