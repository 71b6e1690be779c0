"""HTTP requests for tools (``fetch_url``, ``web_search``, custom ``http`` tools): the one home
of ``aiohttp`` in ``bot/``.

A :class:`Client` makes requests one at a time, reads at most a given number of bytes of each
body, keeps no cookies, never uses a proxy from the environment and does not follow
redirects itself. With a :class:`~bot.tools.addresses.Reach`, names are resolved by a resolver
that keeps only the addresses that may be reached, and aiohttp connects to exactly those (an
address written in the URL is checked before the request). Failures to connect or to read are
:class:`ToolError` with plain words.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from bot.tools.addresses import Reach, refusal
from bot.tools.base import ToolError

Resolver = AbstractResolver
"""What resolves names (the system's resolver by default; tests map names themselves)."""
_CHUNK = 64 * 1024


@dataclass(frozen=True, slots=True)
class Answer:
    url: str
    status: int
    reason: str
    headers: Mapping[str, str]
    """By lower-case name."""
    content_type: str
    """The media type, lower case, without parameters ("" when the answer gave none)."""
    charset: str | None
    body: bytes
    complete: bool
    """False: the body was longer than the limit and only its start was read."""

    def text(self) -> str:
        try:
            return self.body.decode(self.charset or "utf-8", errors="replace")
        except LookupError:  # a charset Python does not know
            return self.body.decode("utf-8", errors="replace")


class GuardedResolver(AbstractResolver):
    """Resolves with ``inner`` and keeps only the addresses ``reach`` permits; refuses the name
    (a :class:`ToolError`) when none is left."""

    def __init__(self, inner: AbstractResolver, reach: Reach) -> None:
        self._inner = inner
        self._reach = reach

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        kept = [r for r in found if self._reach.permits(ipaddress.ip_address(r["host"]))]
        if not kept:
            if found:
                raise refusal(host, ipaddress.ip_address(found[0]["host"]))
            raise ToolError(f"{host} did not resolve to any address")
        return kept

    async def close(self) -> None:
        await self._inner.close()


class Client:
    """``async with Client(...) as http: answer = await http.request("GET", url, limit=…)``."""

    def __init__(
        self,
        *,
        reach: Reach | None = None,
        resolver: Resolver | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._reach = reach
        connector: aiohttp.BaseConnector | None = None
        if reach is not None:
            guarded = GuardedResolver(resolver or aiohttp.ThreadedResolver(), reach)
            connector = aiohttp.TCPConnector(resolver=guarded, use_dns_cache=False, limit=2)
        elif resolver is not None:
            connector = aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False)
        self._session = aiohttp.ClientSession(
            connector=connector, headers=dict(headers or {}), cookie_jar=aiohttp.DummyCookieJar()
        )

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._session.close()

    async def request(
        self,
        method: str,
        url: str,
        *,
        limit: int,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Answer:
        """One request, its body read up to ``limit`` bytes; redirects are answers too."""
        if self._reach is not None:
            self._reach.check_host(URL(url).host or "")
        try:
            async with self._session.request(
                method, url, params=params, json=json, headers=headers, allow_redirects=False
            ) as resp:
                body, complete = await _read(resp, limit)
                kind = resp.content_type.lower() if "Content-Type" in resp.headers else ""
                return Answer(
                    str(resp.url),
                    resp.status,
                    resp.reason or "",
                    {k.lower(): v for k, v in resp.headers.items()},
                    kind,
                    resp.charset,
                    body,
                    complete,
                )
        except aiohttp.ClientConnectorError as exc:
            raise ToolError(
                f"could not connect to {exc.host}:{exc.port}: {_why(exc.os_error)}"
            ) from None
        except aiohttp.ClientError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from None


def _why(error: OSError) -> str:
    if isinstance(error.errno, int) and error.errno > 0:
        return os.strerror(error.errno).lower()
    return error.strerror or str(error)


async def _read(resp: aiohttp.ClientResponse, limit: int) -> tuple[bytes, bool]:
    """At most ``limit`` bytes of the body; whether that was all of it."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(_CHUNK):
        room = limit - size
        if len(chunk) > room:
            chunks.append(chunk[:room])
            return b"".join(chunks), False
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), True
