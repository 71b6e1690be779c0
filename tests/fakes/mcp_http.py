"""The fake MCP server (:mod:`tests.fakes.mcp_server`) over streamable HTTP: an aiohttp server
on loopback (port 0) in the test's own event loop. ``POST /mcp`` answers requests with
``application/json``; ``GET /mcp`` is the Server-Sent Events stream that carries
``notifications/tools/list_changed``; ``DELETE /mcp`` ends the session. A crash drops the
connection without an answer; :meth:`FakeMcpHttp.stop` makes the whole server go away. With
``token``, a request without ``Authorization: Bearer <token>`` is answered 401 (no header) or
403 (another token), as a server that wants a sign-in does."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable, Container
from typing import Any

from aiohttp import web

from tests.fakes.mcp_server import Behaviour, catalog


class FakeMcpHttp:
    """The same behaviour over streamable HTTP on ``http://127.0.0.1:<port>/mcp``."""

    def __init__(
        self,
        catalog_name: str = "basic",
        *,
        hang_initialize: bool = False,
        token: str | None = None,
        issuer: str | None = None,
        tokens: Container[str] | None = None,
    ) -> None:
        self.behaviour = Behaviour(catalog(catalog_name), hang_initialize)
        self.behaviour.task_capable = catalog_name == "tasks"
        self.token = token
        self.tokens = tokens
        """With it, any bearer token it holds is let in (and ``token`` too)."""
        self.called_with: list[tuple[str, str]] = []
        """Each tool call's tool and the bearer token it came with, in order."""
        self.issuer = issuer
        """With it, the server publishes protected-resource metadata naming this authorization
        server (OAuth 2.1 as MCP has it), and its 401 points there."""
        self.arrived = asyncio.Event()
        """Set at each message the server gets (a test clears it, then waits for the next)."""
        self.headers: list[dict[str, str]] = []
        """The headers of every POST, in order."""
        self._streams: list[asyncio.Queue[dict[str, Any] | None]] = []
        self._sessions = (f"session-{n}" for n in itertools.count(1))
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def __aenter__(self) -> FakeMcpHttp:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/mcp", self._post)
        app.router.add_get("/mcp", self._get)
        app.router.add_delete("/mcp", self._delete)
        app.router.add_get("/.well-known/oauth-protected-resource/mcp", self._resource)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        """Stop listening (a dead server); :meth:`start` again listens on the same port."""
        for queue in self._streams:
            queue.put_nowait(None)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _post(self, request: web.Request) -> web.StreamResponse:
        self.headers.append(dict(request.headers))
        if (refused := self._refused(request)) is not None:
            return refused
        message = await request.json()
        if message.get("method") == "tools/call":
            given = request.headers.get("Authorization", "").removeprefix("Bearer ")
            self.called_with.append((message["params"]["name"], given))
        reply = self.behaviour.handle(message)
        self.arrived.set()
        if reply.crash:  # the connection drops without an answer
            assert request.transport is not None
            request.transport.close()
            return web.Response(status=500)
        answers = [m for m in reply.messages if "id" in m]
        for note in (m for m in reply.messages if "id" not in m):
            for queue in self._streams:
                queue.put_nowait(note)
        headers = {}
        if message.get("method") == "initialize":
            headers["mcp-session-id"] = next(self._sessions)
        if "id" not in message:
            return web.Response(status=202)
        if not answers:  # hang: hold the request open until the client gives up
            await asyncio.Event().wait()
        return web.json_response(answers[0], headers=headers)

    async def until(self, holds: Callable[[], bool], within: float = 10.0) -> None:
        """Wait until ``holds()`` is true, checking at each message the server gets."""
        async with asyncio.timeout(within):
            while not holds():
                self.arrived.clear()
                await self.arrived.wait()

    def _refused(self, request: web.Request) -> web.Response | None:
        given = request.headers.get("Authorization")
        if self.token is None or given == f"Bearer {self.token}":
            return None
        if self.tokens is not None and given and given.removeprefix("Bearer ") in self.tokens:
            return None
        if given is None or self.issuer is not None:
            where = f"http://127.0.0.1:{self.port}" if self.issuer is not None else ""
            challenge = f'Bearer resource_metadata="{where}/.well-known/oauth-protected-resource'
            challenge += '/mcp"' if self.issuer is not None else '"'
            return web.Response(status=401, headers={"WWW-Authenticate": challenge})
        return web.Response(status=403)

    async def _resource(self, request: web.Request) -> web.Response:
        if self.issuer is None:
            return web.Response(status=404)
        return web.json_response({"resource": self.url, "authorization_servers": [self.issuer]})

    async def _get(self, request: web.Request) -> web.StreamResponse:
        if (refused := self._refused(request)) is not None:
            return refused
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._streams.append(queue)
        try:
            while (note := await queue.get()) is not None:
                await response.write(f"event: message\ndata: {json.dumps(note)}\n\n".encode())
        finally:
            self._streams.remove(queue)
        return response

    async def _delete(self, request: web.Request) -> web.StreamResponse:
        return web.Response(status=200)
