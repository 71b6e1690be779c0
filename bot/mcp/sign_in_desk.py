"""Sign-ins to per-person MCP servers made from a thread: the link is shown to the run's
person alone (:class:`~bot.engine.events.SignInNeeded`: a private note, or a card whose
"Sign in…" shows it to them, :mod:`bot.mcp.sign_in_links`), the call waits, and the bot's HTTP
server takes the authorization server's callback (:meth:`SignInDesk.arrived`) and wakes it;
the card then says how the wait ended (:class:`~bot.engine.events.SignInEnded`).

The link is bound to the person it was made for: its ``state`` names one wait, and the tokens
the code is exchanged for are kept as that person's sign-in, whoever's browser opens it. A
callback with a ``state`` no wait knows (an old link, a forged one), one already used or one
expired changes nothing.

The wait is also recorded in the store before the link shows (:mod:`bot.mcp.sign_in_waits`,
the link sealed in its row):
a restart finds the run paused on it, and the callback that comes back after the restart
exchanges the code itself (:func:`~bot.mcp.sdk.oauth.exchange_later`), keeps the tokens and
resumes the run (``resume``), which makes the call it waited in. A wait nobody signs in to
ends at its link's expiry: in this process, the call ends "not signed in"; a paused run's call
ends so from the expiry's job (``expire``, :mod:`bot.approvals.decisions`), and the run goes on.

With several workers (:class:`Peers`), the callback may reach a worker other than the one whose
call waits (a load balancer). The row names the worker that waits (its ``owner``); the worker
that got the callback hands its result to the row, sealed, and nudges the thread's key; the
owner hears it (or reads the row at its next poll), takes the result once (compare-and-set) and
wakes its call, whose SDK flow exchanges the code as usual. The page waits a few seconds for
the owner to take it; an owner that is gone, or never takes it, leaves it to the worker that
got the callback, which finishes it as after a restart. Whichever it is, one claim of the row
wins: the code is exchanged once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from bot.engine.events import SignInEnded, SignInNeeded
from bot.errors import ThreadlineError
from bot.infra.clock import Clock
from bot.infra.sealed import Sealer
from bot.mcp.auth import Authorized, Exchange, SignInFailed
from bot.mcp.peers import Peers
from bot.mcp.sdk.oauth import SignInRequired, exchange_later
from bot.mcp.sign_in_waits import (
    LINK,
    SignInWait,
    SignInWaitStore,
    not_signed_in,
    seal,
    unseal,
    wait_id,
)
from bot.mcp.tokens import Vault
from bot.tools.base import ToolContext

log = logging.getLogger(__name__)

UNKNOWN = (
    "This sign-in link is not one being waited for (an old link, one already used, or a"
    " forged one): nothing changed. Ask the bot again in the thread for a new link."
)
USED = (
    "This sign-in link was used already (or its wait ended): nothing changed. Ask the bot"
    " again in the thread for a new link if you still need one."
)
EXPIRED = (
    "This sign-in link has expired: nothing changed. Ask the bot again in the thread for a new"
    " link."
)
DONE = "Signed in. You can close this tab: the run goes on in the thread."
ENDED = (
    "This sign-in's wait ended before it came back (the call no longer waits): nothing"
    " changed. Ask the bot again in the thread for a new link if you still need one."
)
HAND_WAIT_S = 10.0
"""A callback handed to the worker whose call waits waits this long for it to take it."""
HAND_POLL_S = 0.25
"""…reading the row this often when no nudge says it was taken."""
Resume = Callable[[str], Awaitable[None]]
"""Resumes the paused run of a thread (its key) whose sign-in came back after a restart."""
Expire = Callable[[SignInWait], Awaitable[None]]
"""Arranges for a recorded wait to end at its expiry (a paused run's call ends then)."""


@dataclass(frozen=True, slots=True)
class Kept:
    """Where the sign-ins waited for are kept across restarts, and how they are finished."""

    waits: SignInWaitStore
    sealer: Sealer
    vault: Vault
    resume: Resume
    expire: Expire | None = None
    peers: Peers | None = None
    """None: one process alone on its store."""
    take_over: Resume | None = None
    """With ``peers``: mends a thread whose worker died mid-run, as after a restart (its run
    is found paused on the sign-in), before the callback resumes it."""


@dataclass
class _Wait:
    server: str
    person: str
    key: str
    came: asyncio.Future[Authorized]
    arrived_at: float | None = None
    poked: asyncio.Future[None] | None = None
    """Set when a nudge for the thread is heard: a callback may have been handed to the row."""


@dataclass(frozen=True, slots=True)
class Landing:
    """What the callback page says, with its HTTP status."""

    status: int
    text: str


@dataclass
class SignInDesk:
    """The sign-ins waited for in this process, by the ``state`` of their link."""

    clock: Clock
    redirect_uri: str
    kept: Kept | None = None
    """None: the waits live in this process only (a restart ends them)."""
    _waits: dict[str, _Wait] = field(default_factory=dict)
    _handing: dict[str, set[asyncio.Event]] = field(default_factory=dict)
    """The callbacks handed to another worker, by thread key: woken by its nudge."""

    def heard(self, key: str) -> None:
        """A nudge for the thread ``key`` (another worker handed a callback to a wait of this
        worker, or took one handed by this worker): the waits concerned look at their rows."""
        for wait in self._waits.values():
            if wait.key == key and wait.poked is not None and not wait.poked.done():
                wait.poked.set_result(None)
        for event in self._handing.get(key, ()):
            event.set()

    async def arrived(self, query: Mapping[str, str]) -> Landing:
        """The authorization server sent a browser back with ``query``."""
        state = query.get("state", "")
        wait = self._waits.get(state)
        if wait is None or wait.came.done():
            return await self._elsewhere(state, query)
        if self.kept is not None:  # used from now on: no other callback changes anything
            await self.kept.waits.use_sign_in_wait(wait_id(state), self.clock.now())
        if error := query.get("error"):
            about = query.get("error_description", "")
            wait.came.set_exception(
                SignInFailed(
                    f"the authorization server said {error}{': ' + about if about else ''}"
                )
            )
            return Landing(400, f"The sign-in did not go through: {error}. Nothing changed.")
        code = query.get("code")
        if not code:
            return Landing(400, "The sign-in came back without a code: nothing changed.")
        wait.arrived_at = self.clock.monotonic()
        wait.came.set_result(Authorized(code, state, query.get("iss")))
        log.info("[%s] %s's sign-in came back", wait.server, wait.person)
        return Landing(200, DONE)

    async def _elsewhere(self, state: str, query: Mapping[str, str]) -> Landing:
        """A callback no wait of this process knows: one whose call waits on another worker
        alive is handed to it; one recorded before a restart (or whose worker is gone)
        finishes here (once), and its run resumes."""
        kept = self.kept
        found = await kept.waits.get_sign_in_wait(wait_id(state)) if kept and state else None
        if kept is None or found is None:
            log.info("a sign-in callback with an unknown state: nothing changed")
            return Landing(400, UNKNOWN)
        if found.expires_at <= self.clock.now():
            return Landing(400, EXPIRED)
        if found.used_at is not None:
            return Landing(400, USED)
        code = query.get("code")
        if not code and not query.get("error"):
            return Landing(400, "The sign-in came back without a code: nothing changed.")
        peers = kept.peers
        if peers is not None:
            if found.owner not in ("", peers.owner) and await peers.alive(found.owner):
                landing = await self._hand(kept, peers, found, query)
                if landing is not None:
                    return landing
            if kept.take_over is not None:
                await kept.take_over(found.key)  # a run cut off on a worker gone: found paused
        return await self._finish(kept, found, state, query)

    async def _hand(
        self, kept: Kept, peers: Peers, found: SignInWait, query: Mapping[str, str]
    ) -> Landing | None:
        """Hand the callback to the worker whose call waits and wait a little for it to take
        it; None when it did not (the caller finishes it)."""
        result = {k: query[k] for k in ("code", "iss", "error", "error_description") if k in query}
        await kept.waits.hand_sign_in_wait(
            found.wait_id, seal(kept.sealer, result), self.clock.now()
        )  # False: another callback of the same link handed its own first; it is waited for
        woken = asyncio.Event()
        self._handing.setdefault(found.key, set()).add(woken)
        try:
            await peers.nudge(found.key)
            deadline = self.clock.monotonic() + HAND_WAIT_S
            while (left := deadline - self.clock.monotonic()) > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(left, HAND_POLL_S)):
                        await woken.wait()
                woken.clear()
                now = await kept.waits.get_sign_in_wait(found.wait_id)
                if now is None or now.taken_at is not None:
                    log.info("[%s] a sign-in callback was handed to %s", found.server, found.owner)
                    return _said(now, kept.sealer)
                if now.used_at is not None:
                    return Landing(400, ENDED)
                if now.owner != found.owner:  # it does not wait for it any more
                    return None
            log.warning(
                "[%s] %s did not take a sign-in callback handed to it: finishing it here",
                found.server,
                found.owner,
            )
            return None
        finally:
            handing = self._handing.get(found.key, set())
            handing.discard(woken)
            if not handing:
                self._handing.pop(found.key, None)

    async def _finish(
        self, kept: Kept, found: SignInWait, state: str, query: Mapping[str, str]
    ) -> Landing:
        """Claim the wait (once), exchange its code here and resume its paused run."""
        if not await kept.waits.use_sign_in_wait(found.wait_id, self.clock.now()):
            latest = await kept.waits.get_sign_in_wait(found.wait_id)
            if latest is not None and latest.taken_at is not None:
                return _said(latest, kept.sealer)
            return Landing(400, USED)
        latest = await kept.waits.get_sign_in_wait(found.wait_id)
        handed = unseal(kept.sealer, latest.handed) if latest and latest.handed else None
        landing = await self._exchange(kept, found, state, handed or query)
        await kept.resume(found.key)  # signed in, the call goes on; else it shows a new link
        return landing

    async def _exchange(
        self, kept: Kept, found: SignInWait, state: str, query: Mapping[str, Any]
    ) -> Landing:
        if error := query.get("error"):
            return Landing(400, f"The sign-in did not go through: {error}. Nothing changed.")
        exchange = unseal(kept.sealer, found.sealed)
        if exchange is None or "verifier" not in exchange:  # another key, or none was kept
            return Landing(400, "This sign-in can no longer be read here: nothing changed.")
        authorized = Authorized(query.get("code", ""), state, query.get("iss"))
        try:
            await exchange_later(
                exchange, authorized, kept.vault.slot(found.server, found.person_id)
            )
        except SignInFailed as exc:
            log.warning(
                "[%s] a sign-in that came back after a restart failed: %s", found.server, exc
            )
            return Landing(400, f"The sign-in did not go through: {exc}.")
        log.info("[%s] %s's sign-in came back after a restart", found.server, found.person_id)
        return Landing(200, DONE)

    def browser(self, server: str, person: str, timeout_s: float) -> ChatBrowser:
        return ChatBrowser(self, server, person, timeout_s)

    async def wait(
        self,
        ctx: ToolContext | None,
        server: str,
        person: str,
        link: str,
        timeout_s: float,
        exchange: Exchange | None = None,
    ) -> Authorized:
        if ctx is None or ctx.events is None or ctx.requester is None:
            raise SignInRequired(server)  # no person at hand (start-up): McpSignInNeeded
        state = (parse_qs(urlsplit(link).query).get("state") or [""])[0]
        if not state:
            raise SignInFailed("the sign-in link carries no state")
        came: asyncio.Future[Authorized] = asyncio.get_running_loop().create_future()
        wait = self._waits[state] = _Wait(server, person, str(ctx.thread_key), came)
        kept = ""  # the wait's id once its row (with the link, sealed) is in the store
        signed_in: bool | None = None  # how it ended, once it did (None: cancelled)
        try:
            kept = await self._record(ctx, server, state, link, timeout_s, exchange)
            await ctx.events(
                SignInNeeded(
                    server,
                    ctx.requester.id,
                    ctx.requester.display_name,
                    link,
                    ctx.call_id,
                    kept,
                )
            )
            try:
                async with asyncio.timeout(timeout_s):
                    authorized = await self._back(wait, state)
            except TimeoutError:
                signed_in = False
                raise SignInFailed(
                    not_signed_in(ctx.requester.display_name, server, timeout_s)
                ) from None
            except SignInFailed:
                signed_in = False
                raise
            signed_in = True
            return authorized
        except asyncio.CancelledError:
            # a Stop, or the process stopping: the link stays good (after a restart, its
            # callback resumes the run; after a Stop, it only signs the person in), and no
            # callback is handed here any more
            self._waits.pop(state, None)
            await self._release(server, state)
            raise
        finally:
            if self._waits.pop(state, None) is not None:
                await self._ended(server, state)
            if signed_in is not None and kept:  # its card says so (after the row is used)
                name = ctx.requester.display_name
                await ctx.events(SignInEnded(server, name, kept, signed_in))

    async def _back(self, wait: _Wait, state: str) -> Authorized:
        """The callback, come to this worker or handed to it by another (heard in a nudge, or
        read at the next poll)."""
        peers = self.kept.peers if self.kept is not None else None
        if peers is None:
            return await wait.came
        loop = asyncio.get_running_loop()
        while not wait.came.done():
            wait.poked = loop.create_future()
            await asyncio.wait(
                (wait.came, wait.poked), timeout=peers.poll_s, return_when=asyncio.FIRST_COMPLETED
            )
            if not wait.came.done():
                await self._take(peers, wait, state)
        return wait.came.result()

    async def _take(self, peers: Peers, wait: _Wait, state: str) -> None:
        """Take a callback another worker handed to this wait (once), and wake the call."""
        assert self.kept is not None
        handed = await self.kept.waits.take_sign_in_wait(
            wait_id(state), peers.owner, self.clock.now()
        )
        if handed is None:
            return
        result = unseal(self.kept.sealer, handed)
        if result is None:
            wait.came.set_exception(
                SignInFailed("the sign-in came back to another worker, sealed with another key")
            )
        elif error := result.get("error"):
            about = result.get("error_description", "")
            wait.came.set_exception(
                SignInFailed(
                    f"the authorization server said {error}{': ' + about if about else ''}"
                )
            )
        else:
            wait.arrived_at = self.clock.monotonic()
            wait.came.set_result(Authorized(str(result.get("code", "")), state, result.get("iss")))
            log.info("[%s] %s's sign-in came back to another worker", wait.server, wait.person)
        try:  # the worker that got the callback waits to say so
            await peers.nudge(wait.key)
        except Exception as exc:  # it reads the row again soon by itself
            log.warning("could not tell the worker that got a sign-in callback: %s", exc)

    async def _record(
        self,
        ctx: ToolContext,
        server: str,
        state: str,
        link: str,
        timeout_s: float,
        exchange: Exchange | None,
    ) -> str:
        """Keep the wait, the link sealed in its row; its id ('': no store)."""
        if self.kept is None or ctx.requester is None:
            return ""
        now = self.clock.now()
        peers = self.kept.peers
        wait = SignInWait(
            wait_id=wait_id(state),
            server=server,
            person_id=ctx.requester.id,
            person_name=ctx.requester.display_name,
            key=str(ctx.thread_key),
            call_id=ctx.call_id or "",
            sealed=seal(self.kept.sealer, {**(exchange or {}), LINK: link}),
            created_at=now,
            expires_at=now + timeout_s,
            owner=peers.owner if peers is not None else "",
        )
        await self.kept.waits.add_sign_in_wait(wait)
        if self.kept.expire is not None and wait.call_id:
            await self.kept.expire(wait)
        return wait.wait_id

    async def _ended(self, server: str, state: str) -> None:
        """The wait in this process ended (signed in, timed out): its link works no more, here,
        on another worker or after a restart."""
        if self.kept is None:
            return
        try:
            await self.kept.waits.end_sign_in_wait(wait_id(state), self.clock.now())
        except ThreadlineError:  # the store is closing: the link expires by itself
            log.warning("[%s] could not close a sign-in wait", server, exc_info=True)

    async def _release(self, server: str, state: str) -> None:
        """The call no longer waits here: a callback that reaches another worker is finished
        there, not handed here."""
        if self.kept is None or self.kept.peers is None:
            return
        try:
            await self.kept.waits.release_sign_in_wait(wait_id(state), self.kept.peers.owner)
        except ThreadlineError:
            log.warning("[%s] could not let a sign-in wait go", server, exc_info=True)


def _said(wait: SignInWait | None, sealer: Sealer) -> Landing:
    """The page for a callback the waiting worker took: what it handed."""
    handed = unseal(sealer, wait.handed) if wait is not None and wait.handed else None
    if handed is not None and (error := handed.get("error")):
        return Landing(400, f"The sign-in did not go through: {error}. Nothing changed.")
    return Landing(200, DONE)


class ChatBrowser:
    """The browser of one person's connection to a per-person server: the link goes to the
    person of the call that needs it (:attr:`ctx`, set before each call)."""

    def __init__(self, desk: SignInDesk, server: str, person: str, timeout_s: float) -> None:
        self._desk = desk
        self._server = server
        self._person = person
        self._timeout_s = timeout_s
        self.ctx: ToolContext | None = None

    @property
    def redirect_uri(self) -> str:
        return self._desk.redirect_uri

    async def authorize(self, link: str, exchange: Exchange | None = None) -> Authorized:
        return await self._desk.wait(
            self.ctx, self._server, self._person, link, self._timeout_s, exchange
        )
