"""Sign-ins to per-person MCP servers made from a thread: the link is shown to the run's
person alone (:class:`~bot.engine.events.SignInNeeded`), the call waits, and the bot's HTTP
server takes the authorization server's callback (:meth:`SignInDesk.arrived`) and wakes it.

The link is bound to the person it was made for: its ``state`` names one wait, and the tokens
the code is exchanged for are kept as that person's sign-in, whoever's browser opens it. A
callback with a ``state`` no wait knows (an old link, a forged one, one already used) changes
nothing. The wait lives with the call in this process, as a form's does: a restart ends it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

from bot.engine.events import SignInNeeded
from bot.infra.clock import Clock
from bot.mcp.auth import Authorized, SignInFailed
from bot.mcp.sdk.oauth import SignInRequired
from bot.tools.base import ToolContext

log = logging.getLogger(__name__)

UNKNOWN = (
    "This sign-in link is not one being waited for (an old link, one already used, or a"
    " forged one): nothing changed. Ask the bot again in the thread for a new link."
)
DONE = "Signed in. You can close this tab: the run goes on in the thread."


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
    _waits: dict[str, _Wait] = field(default_factory=dict)

    def arrived(self, query: Mapping[str, str]) -> Landing:
        """The authorization server sent a browser back with ``query``."""
        state = query.get("state", "")
        wait = self._waits.get(state)
        if wait is None or wait.came.done():
            log.info("a sign-in callback with an unknown state: nothing changed")
            return Landing(400, UNKNOWN)
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

    def browser(self, server: str, person: str, timeout_s: float) -> ChatBrowser:
        return ChatBrowser(self, server, person, timeout_s)

    async def wait(
        self, ctx: ToolContext | None, server: str, person: str, link: str, timeout_s: float
    ) -> Authorized:
        if ctx is None or ctx.events is None or ctx.requester is None:
            raise SignInRequired(server)  # no person at hand (start-up): McpSignInNeeded
        state = (parse_qs(urlsplit(link).query).get("state") or [""])[0]
        if not state:
            raise SignInFailed("the sign-in link carries no state")
        came: asyncio.Future[Authorized] = asyncio.get_running_loop().create_future()
        self._waits[state] = _Wait(server, person, came)
        try:
            await ctx.events(
                SignInNeeded(server, ctx.requester.id, ctx.requester.display_name, link)
            )
            try:
                async with asyncio.timeout(timeout_s):
                    return await came
            except TimeoutError:
                raise SignInFailed(
                    f"not signed in: {ctx.requester.display_name} did not sign in to {server}"
                    f" within {timeout_s:g} s"
                ) from None
        finally:
            self._waits.pop(state, None)


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

    async def authorize(self, link: str) -> Authorized:
        return await self._desk.wait(self.ctx, self._server, self._person, link, self._timeout_s)
