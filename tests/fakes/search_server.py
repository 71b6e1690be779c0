"""Fake search providers on one loopback port: SearXNG's JSON API (``/search``), Brave's web
search (``/brave``, key in ``X-Subscription-Token``) and Tavily's (``POST /tavily``, key as a
bearer token). Each remembers the queries it was asked."""

from __future__ import annotations

from types import TracebackType

from aiohttp import web

RESULTS = [
    {
        "title": "Tide tables of Brest",
        "url": "https://tides.example/brest",
        "text": "High water twice a day.",
    },
    {
        "title": "Brest harbour",
        "url": "https://harbour.example/",
        "text": "The harbour master's page.",
    },
]


class FakeSearch:
    def __init__(self, key: str = "brave-key-123456") -> None:
        self.key = key
        self.port = 0
        self.queries: list[tuple[str, str]] = []
        self.searxng_json = True
        """False: SearXNG answers HTML, as when its JSON format is not enabled."""
        self._runner: web.AppRunner | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> FakeSearch:
        app = web.Application()
        app.router.add_get("/search", self._searxng)
        app.router.add_get("/brave", self._brave)
        app.router.add_post("/tavily", self._tavily)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _searxng(self, request: web.Request) -> web.Response:
        self.queries.append(("searxng", request.query["q"]))
        if not self.searxng_json or request.query.get("format") != "json":
            return web.Response(status=403, text="<html>Forbidden</html>", content_type="text/html")
        rows = [{"title": r["title"], "url": r["url"], "content": r["text"]} for r in RESULTS]
        return web.json_response({"query": request.query["q"], "results": rows})

    async def _brave(self, request: web.Request) -> web.Response:
        if request.headers.get("X-Subscription-Token") != self.key:
            return web.json_response({"error": "invalid subscription token"}, status=401)
        self.queries.append(("brave", request.query["q"]))
        rows = [{"title": r["title"], "url": r["url"], "description": r["text"]} for r in RESULTS]
        return web.json_response(
            {"web": {"results": rows[: int(request.query.get("count", "10"))]}}
        )

    async def _tavily(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {self.key}":
            return web.json_response({"detail": "Unauthorized"}, status=401)
        body = await request.json()
        self.queries.append(("tavily", body["query"]))
        rows = [{"title": r["title"], "url": r["url"], "content": r["text"]} for r in RESULTS]
        return web.json_response({"results": rows[: body["max_results"]]})
