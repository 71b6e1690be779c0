"""``web_search``: a query to the search provider the operator configured (a SearXNG instance,
Brave Search or Tavily), its results as a numbered list of titles, links and snippets.

Offered only when a provider is configured. The query leaves the thread, so a call asks first
by default ("Always allow" is offered). The provider's key is read from the environment when
the call is made and never appears in a result or a log line.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

from bot.tools.base import Tool, ToolContext, ToolError, tool
from bot.tools.http import Client
from bot.tools.settings import WebSearchOptions

ENDPOINTS = {
    "brave": "https://api.search.brave.com/res/v1/web/search",
    "tavily": "https://api.tavily.com/search",
}
MAX_BYTES = 1_000_000
SNIPPET_CHARS = 400


@dataclass(frozen=True, slots=True)
class Hit:
    title: str
    url: str
    snippet: str


def web_search_tool(
    options: WebSearchOptions, environ: Mapping[str, str] = os.environ
) -> Tool | None:
    """The ``web_search`` tool for the configured provider, or None when there is none."""
    provider = options.chosen
    if provider is None:
        return None

    async def web_search(
        ctx: ToolContext,
        query: Annotated[str, Field(min_length=1, max_length=400)],
    ) -> str:
        """Search the web. Returns a numbered list of results: title, URL and a snippet.
        Read a result in full with fetch_url.

        Args:
            query: What to search for, as you would type it into a search engine.
        """
        key = environ.get(options.key_variable or "", "")
        try:
            async with asyncio.timeout(options.timeout_s):
                hits = await _search(provider, options, query, key)
        except TimeoutError:
            raise ToolError(
                f"the {provider} search took longer than {options.timeout_s:g} s"
            ) from None
        except ToolError as exc:
            raise ToolError(_redacted(f"the {provider} search failed: {exc}", key)) from None
        if not hits:
            return f"No results for {query!r}."
        lines = [f"Results for {query!r} ({provider}):"]
        for n, hit in enumerate(hits[: options.max_results], 1):
            lines.append(
                f"{n}. {hit.title}\n   {hit.url}\n   {hit.snippet[:SNIPPET_CHARS]}".rstrip()
            )
        return _redacted("\n".join(lines), key)

    return tool(web_search, approval="ask")


def _redacted(text: str, key: str) -> str:
    return text.replace(key, "[redacted]") if len(key) >= 6 else text


async def _search(provider: str, options: WebSearchOptions, query: str, key: str) -> list[Hit]:
    async with Client() as http:
        if provider == "searxng":
            base = str(options.endpoint or options.searxng_url).rstrip("/")
            answer = await http.request(
                "GET", f"{base}/search", params={"q": query, "format": "json"}, limit=MAX_BYTES
            )
        elif provider == "brave":
            answer = await http.request(
                "GET",
                options.endpoint or ENDPOINTS["brave"],
                limit=MAX_BYTES,
                params={"q": query, "count": str(options.max_results)},
                headers={"X-Subscription-Token": key, "Accept": "application/json"},
            )
        else:
            answer = await http.request(
                "POST",
                options.endpoint or ENDPOINTS["tavily"],
                limit=MAX_BYTES,
                json={"query": query, "max_results": options.max_results},
                headers={"Authorization": f"Bearer {key}"},
            )
    if answer.status >= 400:
        raise ToolError(f"it answered {answer.status} {answer.reason}: {answer.text()[:200]}")
    try:
        data = json.loads(answer.body)
    except ValueError:
        raise ToolError("it did not answer with JSON (is its JSON format enabled?)") from None
    return _hits(provider, data)


def _hits(provider: str, data: Any) -> list[Hit]:
    if not isinstance(data, dict):
        return []
    if provider == "brave":
        web = data.get("web")
        rows = web.get("results", []) if isinstance(web, dict) else []
        text_key = "description"
    else:
        rows = data.get("results", [])
        text_key = "content"
    hits = []
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and row.get("url"):
            hits.append(
                Hit(
                    str(row.get("title") or row["url"]),
                    str(row["url"]),
                    str(row.get(text_key) or ""),
                )
            )
    return hits
