"""The browser of ``threadline mcp login`` and ``threadline mcp try``: the sign-in link is
printed, and the authorization server's callback is taken on a local HTTP port (the bot's own
callback address when the bot is not running, else any free port on 127.0.0.1).

``follow`` opens the link itself instead of printing it and waiting for a person: for test
authorization servers that sign in whoever asks at once, as the MCP conformance suite's do.

A callback whose ``state`` is not the one waited for gets a page saying so and changes
nothing (the wait goes on); one that carries an ``error`` ends the sign-in with it.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs, urlsplit

import aiohttp
from aiohttp import web

from bot.mcp.auth import CALLBACK_PATH, Authorized, Exchange, SignInFailed
from bot.mcp.sign_in_desk import SignInDesk

PAGE = "<!doctype html><meta charset=utf-8><title>Threadline</title><p>{}</p>"


class LoopbackBrowser:
    def __init__(
        self,
        say: Callable[[str], None],
        *,
        follow: bool = False,
        wait_s: float = 600.0,
    ) -> None:
        self._say = say
        self._follow = follow
        self._wait_s = wait_s
        self._waiting: dict[str, asyncio.Future[Authorized]] = {}
        self._runner: web.AppRunner | None = None
        self._redirect_uri = ""

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    async def start(
        self, host: str = "127.0.0.1", port: int = 0, public: str | None = None
    ) -> None:
        """Listen on ``host:port`` (0: any free port); ``public`` is the callback address the
        authorization server is given, when it is not this listener's own."""
        app = web.Application()
        app.router.add_get(CALLBACK_PATH, self._callback)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        try:
            await site.start()
        except OSError:
            await self.aclose()
            raise
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        bound = sockets[0].getsockname()[1] if sockets else port
        self._redirect_uri = public or f"http://{host}:{bound}{CALLBACK_PATH}"

    async def aclose(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def authorize(self, link: str, exchange: Exchange | None = None) -> Authorized:
        state = (parse_qs(urlsplit(link).query).get("state") or [""])[0]
        waiting: asyncio.Future[Authorized] = asyncio.get_running_loop().create_future()
        self._waiting[state] = waiting
        try:
            if self._follow:
                await self._open(link)
            else:
                self._say("Open this link to sign in (it is good for this sign-in only):")
                self._say(f"  {link}")
                self._say(f"Waiting for the sign-in to come back to {self.redirect_uri} …")
            try:
                async with asyncio.timeout(self._wait_s):
                    return await waiting
            except TimeoutError:
                raise SignInFailed(f"nobody signed in within {self._wait_s:g} s") from None
        finally:
            self._waiting.pop(state, None)

    async def _open(self, link: str) -> None:
        """Follow the link as a browser would, without a person: the authorization server's
        redirect is to our own callback, which is then visited."""
        async with aiohttp.ClientSession() as http:
            async with http.get(link, allow_redirects=False) as answer:
                back = answer.headers.get("Location")
                if answer.status not in (301, 302, 303, 307, 308) or not back:
                    raise SignInFailed(
                        f"the sign-in page answered HTTP {answer.status}, not a redirect back"
                    )
            async with http.get(back, allow_redirects=False) as landed:
                await landed.read()

    async def _callback(self, request: web.Request) -> web.Response:
        query = request.query
        state = query.get("state", "")
        waiting = self._waiting.get(state)
        if waiting is None or waiting.done():
            return _page(
                400,
                "This sign-in link is not the one being waited for (an old link, or another"
                " sign-in's): nothing changed. Start the sign-in again if you need to.",
            )
        if error := query.get("error"):
            about = query.get("error_description", "")
            waiting.set_exception(
                SignInFailed(
                    f"the authorization server said {error}{': ' + about if about else ''}"
                )
            )
            return _page(400, f"The sign-in did not go through: {error}.")
        code = query.get("code")
        if not code:
            return _page(400, "The sign-in came back without a code: nothing changed.")
        waiting.set_result(Authorized(code, state, query.get("iss")))
        return _page(200, "Signed in. You can close this tab.")


def sign_in_callback(
    desk: SignInDesk,
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The bot's HTTP route for sign-ins made in threads (``GET /mcp/oauth/callback``)."""

    async def callback(request: web.Request) -> web.StreamResponse:
        landed = await desk.arrived(request.query)
        return _page(landed.status, landed.text)

    return callback


def _page(status: int, text: str) -> web.Response:
    return web.Response(
        status=status, text=PAGE.format(html.escape(text)), content_type="text/html"
    )
