"""``fetch_url``: a web page, JSON document or PDF as text the model can read.

A URL can carry thread content out, so a call asks first unless its domain is on
``[tools.fetch_url] allow_domains``; "Always allow" on its card covers that origin (scheme, host
and port; for that person, in that channel), not every fetch. Only public addresses are reached, checked after
name resolution and on every redirect (see :mod:`bot.tools.addresses`), unless the operator
allows the others.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field

from bot.tools.base import Approval, Tool, ToolContext, ToolError, tool
from bot.tools.fetch import fetch, web_url
from bot.tools.http import Answer, Resolver
from bot.tools.origins import host_of, origin_of
from bot.tools.readable import readable
from bot.tools.settings import FetchUrlOptions

MAX_CHARS = 19_000
"""The most text one call returns (the engine cuts any result at 20,000 characters)."""


def _checked_url(text: str) -> str:
    try:
        web_url(text)
    except ToolError as exc:
        raise ValueError(str(exc)) from None
    return text.strip()


WebUrl = Annotated[str, Field(min_length=1, max_length=4000), AfterValidator(_checked_url)]


def allowed(host: str, domains: list[str]) -> bool:
    """Whether ``host`` is one of ``domains`` or under one of them."""
    return any(host == d or host.endswith(f".{d}") for d in domains)


def fetch_url_tool(options: FetchUrlOptions, resolver: Resolver | None = None) -> Tool:
    """The ``fetch_url`` tool as ``options`` configure it; ``resolver`` resolves names (the
    system's by default)."""

    async def fetch_url(ctx: ToolContext, url: WebUrl) -> str:
        """Fetch a web page, JSON document, PDF or text file (HTTP GET) and return it as
        readable text: the main content of HTML pages as Markdown with links, JSON indented,
        the text of PDF pages. Long documents are cut; the result says so.

        Args:
            url: The absolute http:// or https:// URL.
        """
        page, redirects = await fetch(url, options, resolver)
        if page.status >= 400:
            excerpt = page.body[:300].decode("utf-8", errors="replace").strip()
            raise ToolError(
                f"{page.url} answered {page.status} {page.reason}"
                + (f": {excerpt}" if excerpt else "")
            )
        text, title = await asyncio.to_thread(readable, page, MAX_CHARS)
        return _shown(url, page, redirects, title, text)

    def approval_for(args: BaseModel) -> Approval | None:
        host = host_of(str(getattr(args, "url", "")))
        return "never" if host is not None and allowed(host, options.allow_domains) else None

    def subject(args: BaseModel) -> str | None:
        return origin_of(str(getattr(args, "url", "")))

    made = tool(fetch_url, side_effects=True, approval="ask")
    return dataclasses.replace(made, approval_for=approval_for, rule_subject=subject)


def _shown(asked: str, page: Answer, redirects: int, title: str | None, text: str) -> str:
    """What the model reads: where the text came from, then the text (cut when long)."""
    kind = page.content_type or "no content type"
    head = f"{page.url} ({page.status} {page.reason}, {kind}, {len(page.body):,} bytes"
    head += (
        f", after {redirects} redirect{'s' * (redirects != 1)} from {asked})" if redirects else ")"
    )
    lines = [head]
    if title:
        lines.append(f"Title: {title}")
    if not page.complete:
        lines.append(f"[only the first {len(page.body):,} bytes were read: the document is longer]")
    body = text.strip() or "(no readable text)"
    if len(body) > MAX_CHARS:
        rest = len(body) - MAX_CHARS
        body = f"{body[:MAX_CHARS]}\n[cut: {rest:,} more characters of text not shown]"
    return "\n".join(lines) + "\n\n" + body
