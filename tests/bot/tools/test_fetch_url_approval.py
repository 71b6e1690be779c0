"""Who is asked before ``fetch_url`` runs, through the core: listed domains never, others with
a card whose "Always allow" covers that origin only (scheme, host and port), for that person, in
that channel."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.tools.settings import FetchUrlOptions
from bot.tools.web import fetch_url_tool
from tests.bot.tools.world import World
from tests.fakes.scripted_model import call, step, text
from tests.fakes.web_server import FakeWeb, NameMap

SITE = "127.0.0.2"


@pytest.fixture
async def site() -> AsyncIterator[FakeWeb]:
    async with FakeWeb(SITE) as web:
        yield web


@pytest.fixture
async def world(tmp_path: Path, site: FakeWeb) -> AsyncIterator[World]:
    names = NameMap(
        {"docs.test": SITE, "api.docs.test": SITE, "harbour.test": SITE, "sub.harbour.test": SITE}
    )
    options = FetchUrlOptions(allow_domains=["docs.test"], allow_networks=[f"{SITE}/32"])
    w = await World(tmp_path, [fetch_url_tool(options, names)]).start()
    yield w
    await w.core.aclose()


def reads(site: FakeWeb, *hosts: str) -> list[Any]:
    steps: list[Any] = []
    for host in hosts:
        steps += [
            step(call("fetch_url", {"url": f"http://{host}:{site.port}/article"})),
            text(f"read {host}"),
        ]
    return steps


async def test_a_listed_domain_and_its_subdomains_are_read_without_asking(
    world: World, site: FakeWeb
) -> None:
    world.model.steps = reads(site, "docs.test", "api.docs.test")
    await world.say("read the docs")
    await world.say("and the api docs")
    assert world.cards("fetch_url") == [] and site.hits["/article"] == 2
    [result] = world.results("fetch_url")[-1:]
    assert "High water at Brest" in result


async def test_another_domain_asks_and_always_allow_covers_that_domain_only(
    world: World, site: FakeWeb
) -> None:
    world.model.steps = reads(site, "harbour.test")
    await world.say("read the harbour page")
    [card] = world.cards("fetch_url")
    assert site.hits["/article"] == 0 and "harbour.test" in card.text
    origin = f"http://harbour.test:{site.port}"
    assert await world.click(card, f"Always allow {origin} for Alice here") == "Approved."
    assert site.hits["/article"] == 1
    [rule] = await world.core.store.allow_rules()
    assert rule.tool == f"fetch_url:{origin}"

    world.model.steps = reads(site, "harbour.test", "sub.harbour.test")
    await world.say("again")
    assert site.hits["/article"] == 2 and len(world.cards("fetch_url")) == 1
    await world.say("and the subdomain")
    assert len(world.cards("fetch_url")) == 2 and site.hits["/article"] == 2  # not covered: asks


async def test_a_rule_for_an_https_origin_covers_neither_http_nor_another_port(
    world: World, site: FakeWeb
) -> None:
    world.model.steps = [
        step(call("fetch_url", {"url": "https://harbour.test/tides"})),
        text("tried"),
        *reads(site, "harbour.test"),
        step(call("fetch_url", {"url": "https://harbour.test:8443/tides"})),
        text("tried the other port"),
        step(call("fetch_url", {"url": "HTTPS://Harbour.test.:443/again"})),
        text("same origin"),
    ]
    await world.say("read the harbour tides")
    [card] = world.cards("fetch_url")
    assert "“Always allow https://harbour.test for Alice here”" in card.text
    await world.click(card, "Always allow https://harbour.test for Alice here")
    [rule] = await world.core.store.allow_rules()
    assert rule.tool == "fetch_url:https://harbour.test"

    await world.say("now over plain http")  # same host, another scheme and port: asks
    assert len(world.cards("fetch_url")) == 2 and site.hits["/article"] == 0
    await world.click(world.cards("fetch_url")[1], "Deny")
    await world.say("and on 8443")  # same scheme and host, another port: asks
    assert len(world.cards("fetch_url")) == 3
    await world.click(world.cards("fetch_url")[2], "Deny")
    await world.say("and once more")  # the same origin written otherwise: the rule covers it
    assert len(world.cards("fetch_url")) == 3
    shown = world.surface.visible_text()
    assert (
        "▸ `fetch_url` runs without asking" in shown and "HTTPS://Harbour.test.:443/again" in shown
    )


async def test_an_address_refused_after_approval_is_an_error_the_model_reads(
    world: World, site: FakeWeb
) -> None:
    world.model.steps = [
        step(call("fetch_url", {"url": "http://169.254.169.254/latest/"})),
        text("I could not."),
    ]
    await world.say("read the metadata")
    [card] = world.cards("fetch_url")
    await world.click(card, "Approve")
    [result] = world.results("fetch_url")
    assert result.startswith("error: refused: 169.254.169.254 is a link-local address")
