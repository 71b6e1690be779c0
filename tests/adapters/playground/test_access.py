"""Who may use the playground and as whom: Host (DNS rebinding), Origin, the session cookie that
carries the clicker's identity, and the token it needs beyond loopback. Over real HTTP, on the
real core (see conftest)."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from adapters.playground import PlaygroundAdapter
from adapters.playground.access import COOKIE, Access, check_exposure, is_loopback
from adapters.playground.surface import thread_key
from bot.errors import ConfigError
from tests.adapters.playground.conftest import Playground, deploy_then, open_playground

TOKEN = "correct-horse-battery-staple-42"


async def test_a_foreign_host_is_refused_everywhere(playground: Playground) -> None:
    client = playground.client
    for host in ("evil.example", "evil.example:8765", "127.0.0.1.nip.io", "localhost.evil.example"):
        for path in ("/", "/static/app.js", "/api/threads", "/api/info"):
            response = await client.get(path, headers={"Host": host})
            assert response.status == 403, (host, path)
            assert f"not served as {host}" in (await response.json())["error"]
        posted = await client.post(
            "/api/messages", json={"text": "hi", "event_id": "evt-rebind01"}, headers={"Host": host}
        )
        assert posted.status == 403
    assert playground.adapter.state.threads() == []
    for host in ("localhost", "localhost:1234", "127.0.0.1", "[::1]:80", "app.localhost"):
        assert (await client.get("/api/threads", headers={"Host": host})).status == 200, host


async def test_a_foreign_origin_is_refused_with_a_clear_reason(playground: Playground) -> None:
    client = playground.client
    port = client.port
    for origin in ("http://evil.example", "null", f"http://localhost:{port + 1}"):
        posted = await client.post(
            "/api/messages",
            json={"text": "hi", "event_id": "evt-origin01"},
            headers={"Origin": origin},
        )
        assert posted.status == 403
        assert (await posted.json()) == {
            "error": "requests from other sites' pages are not allowed"
        }
        socket = await client.get("/api/ws", headers={"Origin": origin})
        assert socket.status == 403
    same = await client.post(
        "/api/messages",
        json={"text": "hi", "event_id": "evt-origin02"},
        headers={"Origin": f"http://127.0.0.1:{port}"},
    )
    assert same.status == 202
    await playground.idle()


async def test_the_page_sets_a_strict_http_only_session_cookie(playground: Playground) -> None:
    async with (
        aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as browser,
        browser.get(playground.client.make_url("/")) as page,
    ):
        assert page.status == 200
        header = page.headers["Set-Cookie"]
    assert header.startswith(f"{COOKIE}=")
    attributes = {part.strip().split("=")[0].lower(): part for part in header.split(";")[1:]}
    assert "httponly" in attributes and attributes["samesite"].strip() == "SameSite=Strict"
    assert attributes["path"].strip() == "Path=/"


async def test_the_api_needs_a_session_and_a_forged_one_is_refused(playground: Playground) -> None:
    client = playground.client
    cookie = (await playground.cookie("u1"))[COOKIE]
    sid, mac = cookie.split(".")
    for forged in ("", "anything", f"{sid}.{mac[:-2]}xx", f"other{sid}.{mac}", f"{cookie}.x"):
        client.session.cookie_jar.clear()
        for request in (
            client.get("/api/threads", cookies={COOKIE: forged}),
            client.post(
                "/api/messages",
                json={"text": "hi", "event_id": "evt-forged01"},
                cookies={COOKIE: forged},
            ),
        ):
            response = await request
            assert response.status == 401, forged
            assert "no playground session" in (await response.json())["error"]
    assert playground.adapter.state.threads() == []


async def test_the_identity_comes_from_the_cookie_not_from_the_page(playground: Playground) -> None:
    playground.model.steps = deploy_then("Deployed!")
    thread_id = (await playground.say("ship it", user_id="u1", user_name="Ada"))["thread_id"]
    await playground.idle()
    approve = await playground.button(thread_id, "Approve")
    ada = await playground.user_id("u1")
    # Mallory's page claims to be Ada, by id and by name: she is still herself
    forged = await playground.client.post(
        "/api/actions",
        json={"thread_id": thread_id, "action_id": approve, "user_id": ada, "user_name": "Ada"},
        cookies=await playground.cookie("mallory"),
    )
    assert forged.status == 200
    assert "isn't yours to decide" in (await forged.json())["note"]
    assert playground.ran == []
    session = await playground.session(thread_id)
    assert session.messages[0].author_id == f"playground:{ada}"  # type: ignore[union-attr]
    assert await playground.user_id("mallory") != ada


async def test_a_session_outlives_a_restart(tmp_path: Path) -> None:
    async with open_playground(tmp_path) as first:
        cookie = await first.cookie("u1")
        before = await first.user_id("u1")
    async with open_playground(tmp_path) as second:
        second.sessions["u1"] = cookie[COOKIE]
        assert await second.user_id("u1") == before
    assert (tmp_path / "playground.key").stat().st_mode & 0o777 == 0o600


def test_beyond_loopback_the_playground_refuses_to_start_without_a_token(tmp_path: Path) -> None:
    for host in ("0.0.0.0", "::", "192.168.1.20", "bot.example.com"):
        with pytest.raises(ConfigError) as refused:
            PlaygroundAdapter(None, tmp_path, host=host)  # type: ignore[arg-type]
        assert refused.value.setting == "THREADLINE_PLAYGROUND_TOKEN"
        assert "beyond this machine" in str(refused.value)
    with pytest.raises(ConfigError, match="at least 16 characters"):
        check_exposure("0.0.0.0", "short")
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.53"):
        check_exposure(host, None)


async def test_with_a_token_the_page_opens_once_with_it_and_then_by_cookie(tmp_path: Path) -> None:
    async with open_playground(tmp_path, host="0.0.0.0", token=TOKEN) as playground:
        url = playground.client.make_url
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:
            for path in ("/", "/?token=wrong-token-of-enough-length", "/?token="):
                async with browser.get(url(path), allow_redirects=False) as refused:
                    assert refused.status == 401
                    assert "THREADLINE_PLAYGROUND_TOKEN" in await refused.text()
                    assert COOKIE not in refused.cookies
            async with browser.get(url("/api/threads")) as api:
                assert api.status == 401
            async with browser.get(url(f"/?token={TOKEN}")) as opened:
                assert opened.status == 200 and opened.url.query == {}  # redirected to /
                assert opened.history[0].status == 303
            async with browser.get(url("/")) as again:  # the cookie is enough from now on
                assert again.status == 200
            async with browser.post(
                url("/api/messages"), json={"text": "hi", "event_id": "evt-token-01"}
            ) as posted:
                assert posted.status == 202
        await playground.idle()
        assert [t.title for t in playground.adapter.state.threads()] == ["hi"]
        assert await playground.core.store.has_session(
            thread_key(playground.adapter.state.threads()[0].id)
        )
        old = await playground.cookie("u1")
    async with open_playground(tmp_path, host="0.0.0.0", token=TOKEN + "-rotated") as rotated:
        response = await rotated.client.get("/api/threads", cookies=old)
        assert response.status == 401  # a new token ends the old sessions


def test_host_names_that_are_loopback_and_those_that_are_allowed() -> None:
    assert all(
        map(
            is_loopback,
            ["localhost", "LOCALHOST.", "a.localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]"],
        )
    )
    assert not any(
        map(is_loopback, ["0.0.0.0", "::", "10.0.0.1", "localhost.example", "evil.example"])
    )
    local = Access("127.0.0.1", None, b"k" * 32)
    assert local.host_allowed("127.0.0.1:8765") and local.host_allowed("localhost")
    assert not local.host_allowed("192.168.1.20:8765") and not local.host_allowed(None)
    assert not local.host_allowed("bad host") and not local.host_allowed("[::1")
    named = Access("bot.lan", TOKEN, b"k" * 32)
    assert named.host_allowed("bot.lan:8765") and named.host_allowed("BOT.LAN")
    assert not named.host_allowed("evil.example")
    anywhere = Access("0.0.0.0", TOKEN, b"k" * 32)
    assert anywhere.host_allowed("203.0.113.9:8765") and anywhere.host_allowed("bot.example.com")
