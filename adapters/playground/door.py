"""The playground's door, in aiohttp terms: every route checks ``Host`` and ``Origin``; the page
starts a session (with the token, when one is set); the API needs the session and hands its
user to the handler in ``request[USER]``. The rules themselves are in ``access.py``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from adapters.playground.access import (
    COOKIE,
    COOKIE_MAX_AGE_S,
    TOKEN_SETTING,
    Access,
    check_exposure,
)

STATIC = Path(__file__).with_name("static")
STATIC_FILES = frozenset({"app.js", "markdown.js", "style.css"})
USER = web.RequestKey("playground_user", str)
"""Where a checked API request carries its session's user id."""
NEEDS_TOKEN = (
    f"This playground needs its token: open it as /?token=… with the value of {TOKEN_SETTING}.\n"
)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Door:
    def __init__(
        self, data_dir: Path, host: str, token: str | None, stopping: Callable[[], bool]
    ) -> None:
        check_exposure(
            host, token
        )  # before anything starts: no token, no playground beyond loopback
        self._data_dir = data_dir
        self._host = host
        self._token = token
        self._stopping = stopping
        self.access: Access | None = None

    async def open(self) -> None:
        """Read (or make) the key that signs session cookies."""
        self.access = await asyncio.to_thread(Access.load, self._data_dir, self._host, self._token)

    def checked(self, request: web.Request) -> Access:
        """Refuse a foreign ``Host`` (DNS rebinding), other sites' pages (a browser always names
        the page's origin) and late requests."""
        if self.access is None or self._stopping():
            raise refusal(web.HTTPServiceUnavailable, "the playground is stopping")
        host = request.headers.get("Host")
        if not self.access.host_allowed(host):
            raise refusal(
                web.HTTPForbidden, f"this playground is not served as {host or 'no host'}"
            )
        if not self.access.origin_allowed(request.headers.get("Origin"), host):
            raise refusal(web.HTTPForbidden, "requests from other sites' pages are not allowed")
        return self.access

    def api(self, handler: Handler) -> Handler:
        """``handler`` for checked requests that carry a session (its user in ``request[USER]``)."""

        async def checked(request: web.Request) -> web.StreamResponse:
            user_id = self.checked(request).user_of(request.cookies.get(COOKIE))
            if user_id is None:
                raise refusal(
                    web.HTTPUnauthorized, "no playground session: open (or reload) the page"
                )
            request[USER] = user_id
            return await handler(request)

        return checked

    async def page(self, request: web.Request) -> web.StreamResponse:
        """The page; it starts a session when there is none (with the token, if one is set)."""
        access = self.checked(request)
        given = request.query.get("token")
        has_session = access.user_of(request.cookies.get(COOKIE)) is not None
        if not has_session and access.needs_token and not access.token_matches(given):
            raise web.HTTPUnauthorized(text=NEEDS_TOKEN, headers={"Cache-Control": "no-store"})
        if given is not None:  # the token leaves the address bar and the history at once
            response: web.StreamResponse = web.Response(
                status=303, headers={"Location": "/", "Cache-Control": "no-store"}
            )
        else:
            response = web.FileResponse(
                STATIC / "index.html", headers={"Cache-Control": "no-cache"}
            )
        if not has_session:
            response.set_cookie(
                COOKIE,
                access.new_session(),
                max_age=COOKIE_MAX_AGE_S,
                path="/",
                httponly=True,
                samesite="Strict",
            )
        return response

    async def static(self, request: web.Request) -> web.FileResponse:
        self.checked(request)
        name = request.match_info["name"]
        if name not in STATIC_FILES:
            raise refusal(web.HTTPNotFound, "no such file")
        return web.FileResponse(STATIC / name, headers={"Cache-Control": "no-cache"})


def refusal(kind: type[web.HTTPException], message: str) -> web.HTTPException:
    return kind(text=json.dumps({"error": message}), content_type="application/json")
