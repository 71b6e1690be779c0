"""Per-person sign-ins made from a thread, through the real core, MCP servers and SQLite store;
the world is faked: an OAuth authorization server issuing one token per sign-in, an MCP server
over streamable HTTP recording which token each call came with, a scripted model and a
recording surface without private notes. The thread shows a card without the link; its
"Sign in…" click shows the link to the wait's person alone (on any process: the link is sealed in
the wait's row); the person's browser follows the link; the callback is handed to the sign-in
desk as the bot's HTTP route would.

- the card holds no link; another person's click is refused without it; the person's click
  holds it, and signing in through it resumes the call; the card then says so, without its
  button;

- a restart between the link and the callback (a crash, or a graceful stop): the code is
  exchanged after it, the person's tokens are kept, and the run resumes with the call it waited
  in, made once;
- a revoked sign-in: the person is shown a new link, and the call goes on once they sign in;
- two people: each signs in for themselves, and each call carries its own person's token.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import aiohttp
import pytest

from bot.api.actions import SignIn, encode, parse
from bot.api.inbound import Author, Inbound, ThreadKey
from bot.config import Settings
from bot.core import Core
from bot.infra.clock import SystemClock
from bot.infra.sealed import sealer
from bot.llm.messages import ToolResult, UserMessage
from bot.mcp.servers import McpServers
from bot.mcp.sign_in_desk import Landing
from bot.mcp.tokens import Vault
from bot.sessions.model import RunState
from bot.storage.sqlite.store import SqliteStore
from bot.tools import ToolRegistry
from bot.tools.builtin import builtin_tools
from tests.fakes.mcp_http import FakeMcpHttp
from tests.fakes.oauth_server import FakeOAuthServer
from tests.fakes.scripted_model import ScriptedModel, Step, call, step, text
from tests.fakes.surface import FakeMessage, RecordingSurface

KEY = ThreadKey("slack:T1:C1:100.1")
ALICE = Author(id="slack:U1", display_name="Alice")
BOB = Author(id="slack:U2", display_name="Bob")
LINK = re.compile(r"\((http://127\.0\.0\.1:\d+/authorize\?[^)\s]+)\)")
WAIT = 20.0


class Thread(RecordingSurface):
    """The thread, whose posts a test can wait for."""

    def __init__(self, clock: SystemClock) -> None:
        super().__init__(clock, thread_key=KEY)
        self.changed = asyncio.Event()

    async def post(self, text: str, buttons: Any = ()) -> str:
        found = await super().post(text, buttons)
        self.changed.set()
        return found

    async def until(self, holds: Callable[[], bool]) -> None:
        async with asyncio.timeout(WAIT):
            while not holds():
                self.changed.clear()
                await self.changed.wait()

    def links(self) -> list[str]:
        """The sign-in links the thread shows (to everyone in it): none may show."""
        return [m.group(1) for t in self.texts() for m in LINK.finditer(t)]

    def cards(self) -> list[FakeMessage]:
        """The sign-in cards posted, first to last (their button gone once their wait ended)."""
        return [
            m
            for m in self.live()
            if any(isinstance(parse(b.action_id), SignIn) for b in m.first_buttons)
        ]


def link_in(note: str) -> str:
    """The sign-in link a private note holds."""
    found = LINK.search(note)
    assert found is not None, note
    return found.group(1)


class Later(SystemClock):
    """The time an hour from now."""

    def now(self) -> float:
        return super().now() + 3600.0


class Moved(SystemClock):
    """The time, moved on by ``ahead`` seconds when a test says so."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def now(self) -> float:
        return super().now() + self.ahead


class Bot:
    """One process of the bot: its core on the store in ``data``, its MCP servers."""

    def __init__(
        self,
        settings: Settings,
        model: ScriptedModel,
        thread: Thread,
        clock: SystemClock | None = None,
    ) -> None:
        clock = clock or SystemClock()
        tools = ToolRegistry(builtin_tools())
        self.core = Core(settings, SqliteStore(settings.database_path), model, tools, clock)
        self.core.register_surfaces("slack:", lambda key: thread, lambda key: "slack:T1:C1")
        self.mcp = McpServers(
            settings,
            clock,
            asking=self.core.asking,
            waits=self.core.store,
            resume=self.core.signed_in,
            keep=self.core.store,
            expire=self.core.decisions.sign_in_expires,
            peers=self.core.peers,
            take_over=self.core.sign_in_take_over,
        )
        self.mcp.install(self.core.tools)
        self.thread = thread
        self._n = 0

    async def start(self) -> None:
        await self.core.start()
        await self.mcp.start()
        await self.core.recover()
        await self.core.wait_idle()  # what a restart left is mended

    def say(self, words: str, author: Author) -> asyncio.Task[None]:
        self._n += 1
        inbound = Inbound(KEY, author, words, f"ev-{author.id}-{self._n}-{id(self)}")
        return asyncio.ensure_future(self.core.handle(inbound, self.thread))

    async def asks(self, words: str, author: Author) -> asyncio.Task[None]:
        """``author`` says ``words`` and the run calls ``docs__sign_in``: its task, once the
        thread shows a sign-in card."""
        asked = self.say(words, author)
        await self.thread.until(lambda: bool(self.thread.cards()))
        return asked

    async def clicked(self, who: Author, card: FakeMessage | None = None) -> str:
        """``who`` presses "Sign in…" on ``card`` (the latest): the private note they are
        shown."""
        card = card or self.thread.cards()[-1]
        [button] = card.first_buttons
        return await self.core.on_action(button.action_id, who, self.thread, card.id) or ""

    async def link_for(self, who: Author) -> str:
        """The link the person's "Sign in…" click on the latest card shows them."""
        return link_in(await self.clicked(who))

    async def lands(self, link: str) -> Landing:
        """The person's browser follows ``link``; the callback reaches this process."""
        return await self.mcp.sign_ins.arrived(await follow(link))

    async def aclose(self) -> None:
        await self.core.aclose()
        await self.mcp.aclose()


async def cancelled(task: asyncio.Task[None]) -> None:
    """``task`` (a run that a test stops waiting for) cancelled and ended."""
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def follow(link: str) -> dict[str, str]:
    """The person's browser opens the link: the authorization server sends it back with the
    callback's query."""
    async with (
        aiohttp.ClientSession() as http,
        http.get(link.replace("&amp;", "&"), allow_redirects=False) as answer,
    ):
        assert answer.status in (302, 303)
        return dict(parse_qsl(urlsplit(answer.headers["Location"]).query))


@dataclass
class World:
    """The faked world of one test: the authorization server, the ``docs`` MCP server, the
    bot's settings, its scripted model and the thread."""

    oauth: FakeOAuthServer
    mcp: FakeMcpHttp
    settings: Settings
    model: ScriptedModel
    thread: Thread

    async def bot(self, clock: SystemClock | None = None) -> Bot:
        """A process of the bot in this world, started (what a restart left mended)."""
        bot = Bot(self.settings, self.model, self.thread, clock)
        await bot.start()
        return bot


@asynccontextmanager
async def world(tmp_path: Path, *then: Step) -> AsyncIterator[World]:
    """The world in which the model calls ``docs__sign_in`` and then answers ``then``."""
    oauth = FakeOAuthServer(token="token", distinct=True)
    # only the tokens issued (and not revoked since) are let in
    mcp = FakeMcpHttp(token="never-issued", issuer=None, tokens=oauth.issued)
    async with oauth, mcp:
        mcp.issuer = oauth.issuer
        docs = {"url": mcp.url, "timeout_s": 20, "oauth": {"sign_in": "per_person"}}
        settings = Settings(data_dir=tmp_path, mcp_servers={"docs": docs})
        model = ScriptedModel([step(call("docs__sign_in", {})), *then])
        yield World(oauth, mcp, settings, model, Thread(SystemClock()))


async def kept_people(data: Path) -> list[tuple[str, dict[str, Any]]]:
    """The sign-ins kept for ``docs`` in the store under ``data``, unsealed."""
    store = SqliteStore(Settings(data_dir=data).database_path)
    await store.open()
    try:
        return await Vault(store, sealer(data, None)).people("docs")
    finally:
        await store.close()


@pytest.mark.parametrize("stop", ["crash", "graceful"])
async def test_a_restart_between_the_link_and_the_callback_resumes_the_run(
    tmp_path: Path, stop: str
) -> None:
    async with world(tmp_path, step(call("docs__echo", {"text": "hi"})), text("Done.")) as w:
        mcp, thread = w.mcp, w.thread
        first = await w.bot()
        asked = await first.asks("echo hi from docs", ALICE)
        assert not thread.links(), "the thread shows no link"
        if stop == "graceful":  # its run is stopped, as at any shutdown
            await first.aclose()
            await asyncio.gather(asked, return_exceptions=True)
        # else the first process is gone (it never hears the callback); the second starts
        second = await w.bot()
        session = await second.core.store.load_session(KEY, second.core.clock.now())
        assert session.state is RunState.AWAITING_APPROVAL, "the run waits for the sign-in"
        # the card's click, answered by the second process: the link is sealed in the row
        query = await follow(await second.link_for(ALICE))
        landed = await second.mcp.sign_ins.arrived(query)
        assert landed == Landing(
            200, "Signed in. You can close this tab: the run goes on in the thread."
        )
        await mcp.until(lambda: ("echo", {"text": "hi"}) in mcp.behaviour.calls, WAIT)
        await thread.until(lambda: "Done." in thread.visible_text())
        again = await second.mcp.sign_ins.arrived(query)
        assert again.status == 400 and "used already" in again.text
        await second.core.wait_idle()
        await cancelled(asked)
        await second.aclose()
        if stop == "crash":
            await first.aclose()
    assert mcp.behaviour.calls == [("echo", {"text": "hi"})], "the call was made once"
    assert mcp.called_with == [("echo", "token-1")]
    codes = [r for r in w.oauth.token_requests if r["grant_type"] == "authorization_code"]
    assert len(codes) == 1
    people = await kept_people(tmp_path)
    assert [(who, record["tokens"]["access_token"]) for who, record in people] == [
        (ALICE.id, "token-1")
    ]


async def test_an_expired_link_after_a_restart_changes_nothing(tmp_path: Path) -> None:
    async with world(tmp_path, text("Not signed in.")) as w:
        first = await w.bot()
        asked = await first.asks("echo hi from docs", ALICE)
        query = await follow(await first.link_for(ALICE))
        second = await w.bot(Later())  # started after the link expired
        late = await second.clicked(ALICE)
        landed = await second.mcp.sign_ins.arrived(query)
        await w.thread.until(lambda: "Not signed in." in w.thread.visible_text())
        await cancelled(asked)
        await second.aclose()
        await first.aclose()
    assert landed.status == 400 and "expired" in landed.text
    assert "is over" in late and "/authorize?" not in late, "the restart ended the expired wait"
    assert not w.oauth.token_requests and not w.mcp.behaviour.calls


async def test_a_link_that_expires_after_a_restart_ends_its_call_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    async with world(tmp_path, text("You did not sign in.")) as w:
        thread = w.thread
        first = await w.bot()
        asked = await first.asks("sign me in to docs", ALICE)
        clock = Moved()
        second = await w.bot(clock)  # the first is gone: it never ends the wait
        # a message meanwhile is told what the run waits for: Alice's sign-in, no approval
        await asyncio.wait_for(second.say("any news?", BOB), WAIT)
        told = thread.texts()[-1]
        assert "Alice has signed in to docs" in told and "approval" not in told
        assert await second.core.scheduler.run_due() == 0, "the link is good for now"
        clock.ahead = w.settings.mcp_servers["docs"].form_timeout_s + 1.0
        assert await second.core.scheduler.run_due() == 1, "its expiry's job"
        await thread.until(lambda: "You did not sign in." in thread.visible_text())
        await second.core.wait_idle()
        session = await second.core.store.load_session(KEY, clock.now())
        await cancelled(asked)
        await second.aclose()
        await first.aclose()
    results = [m for m in session.messages if isinstance(m, ToolResult)]
    assert [r.content for r in results] == [
        "not signed in: Alice did not sign in to docs within 900 s"
    ]
    assert session.state is RunState.IDLE
    assert len(thread.cards()) == 1, "no new link: the call is not made again"
    assert not w.oauth.token_requests and not w.mcp.behaviour.calls
    said = [m for m in w.model.requests[-1].messages if isinstance(m, UserMessage)]
    assert "any news?" in [m.text for m in said], "the message sent meanwhile is read"


async def test_a_revoked_sign_in_shows_the_person_a_new_link(tmp_path: Path) -> None:
    script = [text("Signed in."), step(call("docs__echo", {"text": "again"})), text("Echoed.")]
    async with world(tmp_path, *script) as w:
        oauth, thread = w.oauth, w.thread
        bot = await w.bot()
        first = await bot.asks("sign me in to docs", ALICE)
        old_link = await bot.link_for(ALICE)
        await bot.lands(old_link)
        await asyncio.wait_for(first, WAIT)
        # the server revokes Alice's sign-in: her token and its renewal are refused
        oauth.issued.clear()
        oauth.revoked.extend(r for r in oauth._renews)
        second = bot.say("echo again", ALICE)
        await thread.until(lambda: len(thread.cards()) == 2)
        assert "Alice" in thread.cards()[1].text
        new_link = await bot.link_for(ALICE)
        assert new_link != old_link
        await bot.lands(new_link)
        await asyncio.wait_for(second, WAIT)
        await bot.aclose()
    assert w.mcp.called_with == [("echo", "token-2")], "called once, with the new sign-in"


async def test_two_people_each_sign_in_for_themselves(tmp_path: Path) -> None:
    script = [
        text("Signed in."),
        step(call("docs__echo", {"text": "bob"})),
        text("Echoed for Bob."),
        step(call("docs__echo", {"text": "alice"})),
        text("Echoed for Alice."),
    ]
    async with world(tmp_path, *script) as w:
        mcp, thread = w.mcp, w.thread
        bot = await w.bot()
        alice = await bot.asks("sign me in to docs", ALICE)
        await bot.lands(await bot.link_for(ALICE))
        await asyncio.wait_for(alice, WAIT)
        # Bob's call: Alice's sign-in is not his; he is shown a link of his own
        bob = bot.say("echo bob", BOB)
        await thread.until(lambda: len(thread.cards()) == 2)
        assert "Bob" in thread.cards()[1].text
        assert not mcp.called_with[1:], "nothing is called for Bob with Alice's sign-in"
        await bot.lands(await bot.link_for(BOB))
        await asyncio.wait_for(bob, WAIT)
        await asyncio.wait_for(bot.say("echo alice", ALICE), WAIT)
        await bot.aclose()
    assert mcp.called_with == [("echo", "token-2"), ("echo", "token-1")]
    people = await kept_people(tmp_path)
    kept = {who: record["tokens"]["access_token"] for who, record in people}
    assert kept == {ALICE.id: "token-1", BOB.id: "token-2"}


async def test_the_card_shows_no_link_and_only_its_person_gets_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    async with world(tmp_path, step(call("docs__echo", {"text": "hi"})), text("Echoed.")) as w:
        thread = w.thread
        bot = await w.bot()
        asked = await bot.asks("echo hi from docs", ALICE)
        [card] = thread.cards()
        refused = await bot.clicked(BOB)
        note = await bot.clicked(ALICE)
        unknown = await bot.core.on_action(encode(SignIn("0" * 64)), ALICE, thread, card.id)
        link = link_in(note)
        await bot.lands(link)
        await asyncio.wait_for(asked, WAIT)
        after = await bot.clicked(ALICE, card)
        shown = thread.visible_text()
        await bot.aclose()
    assert card.text == "Alice signed in to docs." and not card.buttons, "the card says so"
    assert [b.label for b in card.first_buttons] == ["Sign in…"]
    assert "Press Sign in… for your link (only you can open it" in next(
        c.text for c in thread.calls if c.op == "post" and c.message_id == card.id
    )
    assert refused == "Only Alice can sign in here: the link signs in whoever opens it, as Alice."
    assert note.startswith("[Sign in to docs](http") and note.endswith("this link is for you alone")
    assert "no longer waited for" in (unknown or "")
    assert "over" in after and "/authorize?" not in after
    assert "Echoed." in shown and w.mcp.called_with == [("echo", "token-1")]
    # the link never shows to others: not in the thread (ever), nor in the log
    posted = "\n".join(c.text or "" for c in thread.calls)
    assert "/authorize?" not in posted and "/authorize?" not in shown
    assert link not in caplog.text and "/authorize?" not in caplog.text
    people = await kept_people(tmp_path)
    assert [who for who, _ in people] == [ALICE.id]
