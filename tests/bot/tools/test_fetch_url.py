"""``fetch_url`` against a small web site on a loopback address, with names resolved by a
resolver the test controls.

The site listens on 127.0.0.2; the tests that need to reach it allow exactly that address
(``allow_networks``), so every other non-public address stays refused, as by default.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.api.inbound import ThreadKey
from bot.infra.clock import ManualClock
from bot.sessions.model import Session
from bot.tools import Tool, ToolContext, ToolError
from bot.tools.settings import FetchUrlOptions
from bot.tools.web import MAX_CHARS, fetch_url_tool
from tests.fakes.web_server import DATA, FakeWeb, NameMap

SITE = "127.0.0.2"
NAMES = {
    "harbour.test": SITE,
    "evil.test": "127.0.0.1",
    "meta.test": "169.254.169.254",
    "both.test": "127.0.0.1",
}


@pytest.fixture
async def site() -> AsyncIterator[FakeWeb]:
    async with FakeWeb(SITE) as web:
        yield web


def reader(resolver: NameMap | None = None, **options: Any) -> Tool:
    options.setdefault("allow_networks", [f"{SITE}/32"])
    return fetch_url_tool(FetchUrlOptions(**options), resolver or NameMap(NAMES))


async def fetch(url: str, tool: Tool | None = None) -> str:
    made = tool or reader()
    ctx = ToolContext(ThreadKey("test:t"), Session(key=ThreadKey("test:t")), None, ManualClock())
    return await made.invoke(ctx, made.parse(json.dumps({"url": url})))


def at(site: FakeWeb, path: str) -> str:
    return f"http://harbour.test:{site.port}{path}"


async def test_an_html_page_becomes_its_main_text_in_markdown(site: FakeWeb) -> None:
    shown = await fetch(at(site, "/article"))
    assert shown.startswith(f"{at(site, '/article')} (200 OK, text/html")
    assert "Title: Tide tables of Brest" in shown
    assert "High water at Brest comes twice a day" in shown
    assert f"[the 2026 tables]({at(site, '/tables/2026')})" in shown
    assert (
        "Cookie settings" not in shown and "Log in" not in shown
    )  # navigation and footer left out


async def test_json_pdf_and_text_are_read_and_other_kinds_refused(site: FakeWeb) -> None:
    assert json.loads((await fetch(at(site, "/data.json"))).split("\n\n", 1)[1]) == DATA
    pdf = await fetch(at(site, "/report.pdf"))
    assert "Title: Harbour report" in pdf and "Tides were normal in March." in pdf
    assert (await fetch(at(site, "/notes.txt"))).endswith("the tide turns at noon.")
    with pytest.raises(
        ToolError, match=r"image/png \(2,056 bytes read\), which fetch_url does not read"
    ):
        await fetch(at(site, "/image.png"))
    with pytest.raises(ToolError, match="answered 404 Not Found: no such page"):
        await fetch(at(site, "/missing"))


async def test_redirects_are_followed_up_to_the_limit(site: FakeWeb) -> None:
    shown = await fetch(at(site, "/chain/2"))
    assert "after 3 redirects from" in shown and "High water at Brest" in shown
    with pytest.raises(ToolError, match="redirected more than 5 times"):
        await fetch(at(site, "/chain/5"))
    assert site.hits["/article"] == 1


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("http://127.0.0.1:{port}/article", "127.0.0.1 is a loopback address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
        ("http://evil.test:{port}/article", "evil.test is 127.0.0.1 (a loopback address)"),
        (
            "http://meta.test/latest/meta-data/",
            "meta.test is 169.254.169.254 (a link-local address)",
        ),
        ("http://[::ffff:127.0.0.1]:{port}/", "is a loopback address inside an IPv6 one"),
        ("http://10.0.0.8/", "10.0.0.8 is a private address"),
    ],
)
async def test_non_public_addresses_are_refused_directly_and_through_a_redirect(
    site: FakeWeb, target: str, why: str
) -> None:
    url = target.format(port=site.port)
    with pytest.raises(
        ToolError, match=f"refused: .*{why.replace('(', '[(]').replace(')', '[)]')}"
    ):
        await fetch(url)
    with pytest.raises(ToolError, match="refused: "):
        await fetch(at(site, f"/to?url={url}"))
    assert site.hits["/to"] == 1 and site.hits["/article"] == 0


async def test_by_default_every_non_public_address_is_refused(site: FakeWeb) -> None:
    with pytest.raises(ToolError, match=f"harbour.test is {SITE} [(]a loopback address[)]"):
        await fetch(at(site, "/article"), fetch_url_tool(FetchUrlOptions(), NameMap(NAMES)))
    assert site.hits["/article"] == 0
    allowed = fetch_url_tool(FetchUrlOptions(allow_private=True), NameMap(NAMES))
    assert "High water" in await fetch(at(site, "/article"), allowed)


async def test_only_the_addresses_checked_are_connected_to(site: FakeWeb) -> None:
    """A name with a refused address and an allowed one: the connection goes to the allowed one
    (the resolver is asked once, and what it said is what is used)."""
    names = NameMap({"both.test": SITE})
    original = names.resolve

    async def two(host: str, port: int = 0, family: Any = 0) -> Any:
        found = await original(host, port, family)
        return [{**found[0], "host": "127.0.0.1"}, *found]

    names.resolve = two  # type: ignore[method-assign]
    shown = await fetch(f"http://both.test:{site.port}/article", reader(names))
    assert "High water" in shown and names.asked == ["both.test"]


async def test_huge_and_slow_bodies_are_cut_and_timed_out(site: FakeWeb) -> None:
    shown = await fetch(at(site, "/huge"))
    assert "[only the first 2,000,000 bytes were read: the document is longer]" in shown
    assert "more characters of text not shown]" in shown and len(shown) < MAX_CHARS + 500
    with pytest.raises(ToolError, match="took longer than 0.2 s"):
        await fetch(at(site, "/slow"), reader(timeout_s=0.2))


async def test_unknown_names_and_closed_ports_are_told(site: FakeWeb) -> None:
    with pytest.raises(ToolError, match="nowhere.test"):
        await fetch("http://nowhere.test/")
    closed = FakeWeb(SITE)
    async with closed:
        port = closed.port
    with pytest.raises(ToolError, match=f"could not connect to harbour.test:{port}"):
        await fetch(f"http://harbour.test:{port}/")


@pytest.mark.parametrize(
    "url",
    ["ftp://harbour.test/x", "harbour.test/article", "", "http:///nohost", "javascript:alert(1)"],
)
def test_a_url_that_is_not_http_is_invalid_arguments(url: str) -> None:
    with pytest.raises(ToolError, match="invalid arguments for fetch_url: url"):
        reader().parse(json.dumps({"url": url}))


def test_listed_domains_cover_subdomains_and_international_names_in_ascii() -> None:
    options = FetchUrlOptions(allow_domains=["Bücher.de", "*.Example.COM"])
    assert options.allow_domains == ["xn--bcher-kva.de", "example.com"]
    made = reader(allow_domains=["Bücher.de", "example.com"])
    assert made.approval_for is not None and made.rule_subject is not None
    for url, mode in (
        ("http://bücher.de/x", "never"),
        ("https://api.example.com./", "never"),
        ("https://example.com.evil.test/", None),
        ("https://notexample.com/", None),
    ):
        assert made.approval_for(made.parse(json.dumps({"url": url}))) == mode, url
    subject = made.rule_subject
    for url, origin in (  # a rule covers one scheme, host and port
        ("https://Bücher.DE/a", "https://xn--bcher-kva.de"),
        ("HTTPS://bücher.de.:443/b", "https://xn--bcher-kva.de"),
        ("http://bücher.de/a", "http://xn--bcher-kva.de"),
        ("https://bücher.de:8443/a", "https://xn--bcher-kva.de:8443"),
        ("http://[::1]:8080/", "http://[::1]:8080"),
    ):
        assert subject(made.parse(json.dumps({"url": url}))) == origin, url
