"""A loopback web server that is not the platform: it records every request it gets (path and
headers) and answers each with a small text, so a test can show what reached it."""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType

from aiohttp import web


@dataclass(frozen=True)
class Seen:
    path: str
    headers: dict[str, str]


class Recorder:
    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _any(self, request: web.Request) -> web.Response:
        self.seen.append(Seen(request.path, dict(request.headers)))
        return web.Response(text="recorded", content_type="text/plain")

    async def __aenter__(self) -> Recorder:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._any)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
