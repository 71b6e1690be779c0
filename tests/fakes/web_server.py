"""A small web site on a loopback port, and a resolver that maps chosen names to addresses.

The site serves an HTML article, JSON, a PDF, plain text, an image, redirects (to a path or to
any URL), a chain of redirects, a body far larger than any cap, a body that never ends (until
the test is over), and errors. It counts the requests it answered per path.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections import Counter
from collections.abc import Mapping
from types import TracebackType

from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

ARTICLE = """<!doctype html>
<html><head><title>Tide tables of Brest</title><meta charset="utf-8"></head>
<body>
<nav><a href="/">Home</a> | <a href="/about">About</a> | <a href="/login">Log in</a></nav>
<article>
<h1>Tide tables of Brest</h1>
<p>High water at Brest comes twice a day, about fifty minutes later each day, because the
Moon rises later each day. The largest tides of the year come with the equinoxes.</p>
<p>The harbour master publishes the tables; see <a href="/tables/2026">the 2026 tables</a>.
Spring tides reach seven metres, neap tides about three metres.</p>
<ul><li>Spring tide: seven metres</li><li>Neap tide: three metres</li></ul>
</article>
<footer>Copyright the harbour. Cookie settings. Newsletter.</footer>
</body></html>"""

DATA = {
    "station": "Brest",
    "tides": [{"kind": "high", "height_m": 6.9}, {"kind": "low", "height_m": 1.2}],
}
TEXT = "Plain notes: the tide turns at noon.\n"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


def pdf_with_text(*lines: str, title: str = "Harbour report") -> bytes:
    """A one-page PDF showing ``lines`` (a correct cross-reference table)."""
    content = "BT /F1 14 Tf 72 720 Td 16 TL " + " ".join(f"({line}) '" for line in lines) + " ET"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        " /Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Title ({title}) >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info 6 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


class FakeWeb:
    """``async with FakeWeb() as site:`` serves on ``site.base`` (``http://HOST:PORT``)."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        self.hits: Counter[str] = Counter()
        self.requests: list[dict[str, object]] = []
        """The requests to ``/echo/…``, as they arrived."""
        self.done = asyncio.Event()
        """Set when the test is over: a body that never ends ends then."""
        self._runner: web.AppRunner | None = None

    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def __aenter__(self) -> FakeWeb:
        app = web.Application(middlewares=[self._count])
        pdf = pdf_with_text("Harbour report", "Tides were normal in March.")
        for path, kind, body, status in (
            ("/article", "text/html", ARTICLE.encode(), 200),
            ("/data.json", "application/json", json.dumps(DATA).encode(), 200),
            ("/report.pdf", "application/pdf", pdf, 200),
            ("/notes.txt", "text/plain", TEXT.encode(), 200),
            ("/image.png", "image/png", PNG, 200),
            ("/missing", "text/plain", b"no such page", 404),
        ):
            app.router.add_get(path, _fixed(kind, body, status))
        app.router.add_route("*", "/echo/{tail:.*}", self._echo)
        app.router.add_get("/to", self._redirect)
        app.router.add_get("/chain/{n}", self._chain)
        app.router.add_get("/huge", self._huge)
        app.router.add_get("/slow", self._slow)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.done.set()
        if self._runner is not None:
            await self._runner.cleanup()

    @web.middleware
    async def _count(self, request: web.Request, handler: web.RequestHandler) -> web.StreamResponse:
        self.hits[request.path] += 1
        return await handler(request)

    async def _echo(self, request: web.Request) -> web.Response:
        """What the request was: method, raw path, query, headers and JSON body; ``?status=N``
        answers with that status; a path ending in ``/slow`` never answers (until the test is
        over)."""
        body = await request.json() if request.can_read_body else None
        self.requests.append(
            {
                "method": request.method,
                "path": request.raw_path,
                "headers": dict(request.headers),
                "json": body,
            }
        )
        if request.path.endswith("/slow"):
            await self.done.wait()
        status = int(request.query.get("status", "200"))
        seen = {
            "method": request.method,
            "path": request.raw_path.split("?")[0],
            "query": dict(request.query),
            "json": body,
            "authorization": request.headers.get("Authorization", ""),
        }
        return web.json_response(seen, status=status)

    async def _redirect(self, request: web.Request) -> web.Response:
        raise web.HTTPFound(request.query["url"])

    async def _chain(self, request: web.Request) -> web.Response:
        left = int(request.match_info["n"])
        raise web.HTTPFound(f"/chain/{left - 1}" if left > 0 else "/article")

    async def _huge(self, request: web.Request) -> web.StreamResponse:
        """Ten megabytes of paragraphs."""
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)
        try:
            await response.write(b"<html><body><article>")
            for n in range(40_000):
                await response.write(
                    f"<p>Paragraph {n}: the sea is large and this page is larger. {'Waves. ' * 30}</p>\n".encode()
                )
            await response.write_eof()
        except ConnectionResetError:  # the reader had enough
            pass
        return response

    async def _slow(self, request: web.Request) -> web.StreamResponse:
        """A first piece at once, the rest never (until the test is over)."""
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)
        await response.write(b"<html><body><p>The first words arrive")
        await self.done.wait()
        return response


def _fixed(kind: str, body: bytes, status: int) -> web.RequestHandler:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type=kind, status=status)

    return handler


class NameMap(AbstractResolver):
    """Resolves the names it was given to the addresses it was given; others do not exist."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = dict(names)
        self.asked: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.asked.append(host)
        if host not in self.names:
            raise OSError(socket.EAI_NONAME, f"{host}: Name or service not known")
        address = self.names[host]
        kind = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [
            {
                "hostname": host,
                "host": address,
                "port": port,
                "family": kind,
                "proto": 0,
                "flags": 0,
            }
        ]

    async def close(self) -> None:
        return None
