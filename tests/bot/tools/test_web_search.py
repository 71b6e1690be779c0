"""``web_search`` against fake SearXNG, Brave and Tavily endpoints; offered only when a
provider is configured; the key never shows."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from bot.api.inbound import ThreadKey
from bot.config import Settings, load_settings
from bot.errors import ConfigError
from bot.infra.clock import ManualClock
from bot.sessions.model import Session
from bot.tools import Tool, ToolContext, ToolError
from bot.tools.builtin import web_tools
from bot.tools.search import web_search_tool
from bot.tools.settings import WebSearchOptions
from tests.fakes.search_server import FakeSearch


@pytest.fixture
async def fake() -> AsyncIterator[FakeSearch]:
    async with FakeSearch() as server:
        yield server


async def search(found: Tool | None, query: str) -> str:
    assert found is not None
    ctx = ToolContext(ThreadKey("test:t"), Session(key=ThreadKey("test:t")), None, ManualClock())
    return await found.invoke(ctx, found.parse(json.dumps({"query": query})))


def test_it_is_offered_only_when_a_provider_is_configured() -> None:
    assert [t.name for t in web_tools(Settings())] == ["fetch_url"]
    with_search = Settings(tools={"web_search": {"searxng_url": "http://searx.internal:8080"}})
    assert [t.name for t in web_tools(with_search)] == ["fetch_url", "web_search"]
    assert web_tools(Settings(tools={"fetch_url": {"enabled": False}})) == []


async def test_searxng_results_are_a_numbered_list(fake: FakeSearch) -> None:
    shown = await search(
        web_search_tool(WebSearchOptions(searxng_url=fake.base, max_results=1)), "tides brest"
    )
    assert shown == (
        "Results for 'tides brest' (searxng):\n1. Tide tables of Brest\n   https://tides.example/brest\n"
        "   High water twice a day."
    )
    fake.searxng_json = False
    with pytest.raises(ToolError, match="answered 403 Forbidden"):
        await search(web_search_tool(WebSearchOptions(searxng_url=fake.base)), "x")


@pytest.mark.parametrize("provider", ["brave", "tavily"])
async def test_brave_and_tavily_use_the_key_from_the_environment(
    fake: FakeSearch, provider: str
) -> None:
    options = WebSearchOptions(provider=provider, endpoint=f"{fake.base}/{provider}")  # type: ignore[arg-type]
    variable = f"{provider.upper()}_API_KEY"
    shown = await search(web_search_tool(options, {variable: fake.key}), "brest")
    assert "2. Brest harbour\n   https://harbour.example/" in shown and fake.queries == [
        (provider, "brest")
    ]
    with pytest.raises(ToolError, match="answered 401 Unauthorized") as refused:
        await search(web_search_tool(options, {variable: "wrong-key-999999"}), "brest")
    assert "wrong-key-999999" not in str(refused.value)


def test_a_provider_without_its_key_or_address_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="BRAVE_API_KEY"):
        load_settings(tools={"web_search": {"provider": "brave"}})
    with pytest.raises(ConfigError, match="searxng needs searxng_url"):
        load_settings(tools={"web_search": {"provider": "searxng"}})
    with pytest.raises(ConfigError, match="must start with http"):
        load_settings(tools={"web_search": {"searxng_url": "searx.internal"}})
