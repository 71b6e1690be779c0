"""Sign-ins to per-person MCP servers made from a thread: the link is shown to the run's
person alone (:class:`~bot.engine.events.SignInNeeded`), the call waits, and the bot's HTTP
server takes the authorization server's callback (:meth:`SignInDesk.arrived`) and wakes it.

The link is bound to the person it was made for: its ``state`` names one wait, and the tokens
the code is exchanged for are kept as that person's sign-in, whoever's browser opens it. A
callback with a ``state`` no wait knows (an old link, a forged one), one already used or one
expired changes nothing.

The wait is also recorded in the store before the link shows (:mod:`bot.mcp.sign_in_waits`):
a restart finds the run paused on it, and the callback that comes back after the restart
exchanges the code itself (:func:`~bot.mcp.sdk.oauth.exchange_later`), keeps the tokens and
resumes the run (``resume``), which makes the call it waited in.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

from bot.engine.events import SignInNeeded
from bot.errors import ThreadlineError
from bot.infra.clock import Clock
from bot.infra.sealed import Sealer
from bot.mcp.auth import Authorized, Exchange, SignInFailed
from bot.mcp.sdk.oauth import SignInRequired, exchange_later
from bot.mcp.sign_in_waits import SignInWait, SignInWaitStore, seal, unseal, wait_id
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
Resume = Callable[[str], Awaitable[None]]
"""Resumes the paused run of a thread (its key) whose sign-in came back after a restart."""


@dataclass(frozen=True, slots=True)
class Kept:
    """Where the sign-ins waited for are kept across restarts, and how they are finished."""

    waits: SignInWaitStore
    sealer: Sealer
    vault: Vault
    resume: Resume


@dataclass
class _Wait:
    server: str
    person: str
    came: asyncio.Future[Authorized]
    arrived_at: float | None = None


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

    async def arrived(self, query: Mapping[str, str]) -> Landing:
        """The authorization server sent a browser back with ``query``."""
        state = query.get("state", "")
        wait = self._waits.get(state)
        if wait is None or wait.came.done():
            return await self._after_restart(state, query)
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

    async def _after_restart(self, state: str, query: Mapping[str, str]) -> Landing:
        """A callback no wait of this process knows: one recorded before a restart finishes
        here (once), and its run resumes."""
        kept = self.kept
        found = await kept.waits.get_sign_in_wait(wait_id(state)) if kept and state else None
        if kept is None or found is None:
            log.info("a sign-in callback with an unknown state: nothing changed")
            return Landing(400, UNKNOWN)
        now = self.clock.now()
        if found.used_at is not None:
            return Landing(400, USED)
        if found.expires_at <= now:
            return Landing(400, EXPIRED)
        code = query.get("code")
        if not code and not query.get("error"):
            return Landing(400, "The sign-in came back without a code: nothing changed.")
        if not await kept.waits.use_sign_in_wait(found.wait_id, now):
            return Landing(400, USED)
        landing = await self._exchange(kept, found, state, query)
        await kept.resume(found.key)  # signed in, the call goes on; else it shows a new link
        return landing

    async def _exchange(
        self, kept: Kept, found: SignInWait, state: str, query: Mapping[str, str]
    ) -> Landing:
        if error := query.get("error"):
            return Landing(400, f"The sign-in did not go through: {error}. Nothing changed.")
        exchange = unseal(kept.sealer, found.sealed)
        if exchange is None:
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
        self._waits[state] = _Wait(server, person, came)
        try:
            await self._record(ctx, server, state, timeout_s, exchange)  # before the link shows
            await ctx.events(
                SignInNeeded(
                    server, ctx.requester.id, ctx.requester.display_name, link, ctx.call_id
                )
            )
            try:
                async with asyncio.timeout(timeout_s):
                    return await came
            except TimeoutError:
                raise SignInFailed(
                    f"not signed in: {ctx.requester.display_name} did not sign in to {server}"
                    f" within {timeout_s:g} s"
                ) from None
        except asyncio.CancelledError:
            # a Stop, or the process stopping: the link stays good (after a restart, its
            # callback resumes the run; after a Stop, it only signs the person in)
            self._waits.pop(state, None)
            raise
        finally:
            if self._waits.pop(state, None) is not None:
                await self._ended(server, state)

    async def _record(
        self,
        ctx: ToolContext,
        server: str,
        state: str,
        timeout_s: float,
        exchange: Exchange | None,
    ) -> None:
        if self.kept is None or exchange is None or ctx.requester is None:
            return
        now = self.clock.now()
        await self.kept.waits.add_sign_in_wait(
            SignInWait(
                wait_id=wait_id(state),
                server=server,
                person_id=ctx.requester.id,
                person_name=ctx.requester.display_name,
                key=str(ctx.thread_key),
                call_id=ctx.call_id or "",
                sealed=seal(self.kept.sealer, exchange),
                created_at=now,
                expires_at=now + timeout_s,
            )
        )

    async def _ended(self, server: str, state: str) -> None:
        """The wait in this process ended (signed in, timed out, stopped): its link works no
        more, here or after a restart."""
        if self.kept is None:
            return
        try:
            await self.kept.waits.use_sign_in_wait(wait_id(state), self.clock.now())
        except ThreadlineError:  # the store is closing: the link expires by itself
            log.warning("[%s] could not close a sign-in wait", server, exc_info=True)


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
