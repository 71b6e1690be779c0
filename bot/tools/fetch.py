"""One HTTP GET for ``fetch_url``: redirects followed by hand (each hop's address checked), the
body read up to a size cap, the whole fetch within a time cap.

Only ``http`` and ``https``; no proxy from the environment; no cookies kept between fetches.
Every failure is a :class:`ToolError` the model reads.
"""

from __future__ import annotations

import asyncio

from yarl import URL

from bot.tools.addresses import Reach
from bot.tools.base import ToolError
from bot.tools.http import Answer, Client, Resolver
from bot.tools.settings import FetchUrlOptions

USER_AGENT = "Threadline/0.1 (fetch_url)"
REDIRECTS = frozenset({301, 302, 303, 307, 308})
HEADERS = {
    "User-Agent": USER_AGENT,
    "Accept": "text/html,application/xhtml+xml,application/json,application/pdf,text/plain;q=0.9,*/*;q=0.5",
}


def web_url(text: str) -> URL:
    """``text`` as an absolute http(s) URL with a host; ToolError otherwise."""
    try:
        url = URL(text.strip())
    except (ValueError, TypeError) as exc:
        raise ToolError(f"{text!r} is not a URL: {exc}") from None
    if url.scheme not in ("http", "https"):
        raise ToolError(f"{text!r}: only http:// and https:// URLs can be fetched")
    if not url.host:
        raise ToolError(f"{text!r} has no host")
    return url


async def fetch(
    url: str, options: FetchUrlOptions, resolver: Resolver | None = None
) -> tuple[Answer, int]:
    """GET ``url`` as ``options`` allow, following redirects; the answer and how many
    redirects led to it. ``resolver`` resolves names (the system's by default)."""
    current = web_url(url)
    reach = Reach(options.allow_private, options.allow_networks)
    try:
        async with (
            asyncio.timeout(options.timeout_s),
            Client(reach=reach, resolver=resolver, headers=HEADERS) as http,
        ):
            for hop in range(options.max_redirects + 1):
                answer = await http.request("GET", str(current), limit=options.max_bytes)
                location = answer.headers.get("location")
                if answer.status not in REDIRECTS or not location:
                    return answer, hop
                current = _next(current, location)
    except TimeoutError:
        raise ToolError(
            f"fetching {url} took longer than {options.timeout_s:g} s; nothing was read"
        ) from None
    raise ToolError(
        f"{url} redirected more than {options.max_redirects} times; stopped at {current}"
    )


def _next(current: URL, location: str) -> URL:
    try:
        target = current.join(URL(location))
    except (ValueError, TypeError):
        raise ToolError(f"{current} redirected to {location!r}, which is not a URL") from None
    if target.scheme not in ("http", "https") or not target.host:
        raise ToolError(f"{current} redirected to {location!r}: only http(s) URLs are followed")
    return target
