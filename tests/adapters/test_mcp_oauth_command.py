"""``threadline mcp login``, ``logout``, ``list`` and ``try`` against a server that signs in
with OAuth 2.1: the real program, a fake MCP server that wants a bearer token and the fake
authorization server that issues it. The person's browser is the test: it reads the link the
program prints, opens it, and follows the authorization server back to the program."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bot.infra.sealed import sealer
from bot.mcp.tokens import FOLDER, file_folder
from bot.storage.sqlite.store import SqliteStore
from tests.adapters.test_cli import ROOT
from tests.fakes.mcp_http import FakeMcpHttp
from tests.fakes.oauth_server import FakeOAuthServer

TOKEN = "access-token-that-must-not-show"


@pytest.fixture
async def servers() -> AsyncIterator[tuple[FakeMcpHttp, FakeOAuthServer]]:
    async with (
        FakeOAuthServer(token=TOKEN) as oauth,
        FakeMcpHttp(token=TOKEN, issuer=oauth.issuer) as mcp,
    ):
        yield mcp, oauth


async def sealed_rows(data: Path) -> list[tuple[str, bytes]]:
    """The sign-ins the store keeps for ``docs``, sealed, as the commands left them."""
    store = SqliteStore(data / "threadline.sqlite3")
    await store.open()
    try:
        return await store.sign_ins("docs")
    finally:
        await store.close()


def configure(home: Path, url: str) -> None:
    (home / "threadline.toml").write_text(
        f'[mcp_servers.docs]\nurl = "{url}"\n\n[mcp_servers.docs.oauth]\nscope = "docs:read"\n'
    )


async def run(home: Path, *args: str) -> tuple[int, str, str]:
    proc = await start(home, *args)
    async with asyncio.timeout(60):
        out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def start(home: Path, *args: str) -> asyncio.subprocess.Process:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THREADLINE_")}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "adapters.cli",
        *args,
        cwd=home,
        env=env | {"PYTHONPATH": str(ROOT), "THREADLINE_HTTP_PORT": "0"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def sign_in(proc: asyncio.subprocess.Process) -> tuple[str, list[str]]:
    """Read the printed link, try a callback with a wrong state first, then open the link as
    a browser would; the page the program showed for each."""
    assert proc.stdout is not None
    said: list[str] = []
    async with asyncio.timeout(30):
        while not any("Waiting for the sign-in" in line for line in said):
            said.append((await proc.stdout.readline()).decode())
    link = re.search(r"https?://\S+/authorize\?\S+", "".join(said))
    assert link is not None, said
    waiting = next(line for line in said if "Waiting for the sign-in" in line)
    callback = waiting.split(" back to ", 1)[1].split(" ", 1)[0]
    pages = []
    async with aiohttp.ClientSession() as browser:
        async with browser.get(f"{callback}?code=stolen&state=not-the-one") as wrong:
            pages.append(f"{wrong.status} {await wrong.text()}")
        async with browser.get(link.group(0)) as landed:  # the server sends it back to us
            pages.append(f"{landed.status} {await landed.text()}")
    return "".join(said), pages


async def test_login_list_try_and_logout(
    servers: tuple[FakeMcpHttp, FakeOAuthServer], tmp_path: Path
) -> None:
    mcp, oauth = servers
    configure(tmp_path, mcp.url)

    code, listed, _ = await run(tmp_path, "mcp", "list")
    assert "  sign-in: OAuth, shared" in listed
    assert "  signed in: needs sign-in (`threadline mcp login docs`)" in listed
    assert "a sign-in is needed" in listed and code == 1

    login = await start(tmp_path, "mcp", "login", "docs")
    printed, pages = await sign_in(login)
    async with asyncio.timeout(60):
        out, err = await login.communicate()
    assert login.returncode == 0, printed + out.decode() + err.decode()
    assert pages[0].startswith("400 ") and "not the one being waited for" in pages[0]
    assert pages[1].startswith("200 ") and "Signed in" in pages[1]
    assert re.search(r"docs: signed in \(until .* UTC, renewed after\); 12 tools", out.decode())
    asked = oauth.authorizations[0]
    assert asked["code_challenge_method"] == "S256" and asked["scope"] == "docs:read"
    assert asked["resource"] == mcp.url

    kept = await sealed_rows(tmp_path / ".threadline")
    assert len(kept) == 1 and TOKEN.encode() not in kept[0][1]
    assert oct((tmp_path / ".threadline" / "secret.key").stat().st_mode & 0o777) == "0o600"

    code, listed, _ = await run(tmp_path, "mcp", "list")
    assert re.search(r"  signed in: signed in \(until .*\)", listed) and code == 0
    code, tried, tried_err = await run(tmp_path, "mcp", "try", "docs", "lookup", '{"id": "T-2"}')
    assert tried.splitlines()[-1] == "    T-2: printer on fire (open)", tried + tried_err
    assert len(oauth.authorizations) == 1  # the kept sign-in was used: nobody signed in again

    logged_in = out.decode() + err.decode()
    code, out_text, _ = await run(tmp_path, "mcp", "logout", "docs")
    assert out_text.strip() == "docs: revoked at the authorization server, and deleted here"
    assert oauth.revoked == ["refresh-1", TOKEN]
    assert await sealed_rows(tmp_path / ".threadline") == []
    code, listed, _ = await run(tmp_path, "mcp", "list")
    assert "needs sign-in" in listed

    everything = printed + logged_in + listed + tried + out_text
    assert TOKEN not in everything and "refresh-1" not in everything


async def test_login_refuses_a_server_without_oauth(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text('[mcp_servers.docs]\nurl = "http://127.0.0.1:9/"\n')
    code, _, err = await run(tmp_path, "mcp", "login", "docs")
    assert code == 2
    assert err.strip() == (
        "threadline mcp login: docs does not sign in with OAuth: give it an"
        " [mcp_servers.docs.oauth] section"
    )


async def test_a_sign_in_kept_in_a_file_before_is_moved_into_the_store(tmp_path: Path) -> None:
    """A sign-in an earlier version kept as a sealed file is read into the store by the first
    command, and the file is deleted."""
    data = tmp_path / ".threadline"
    folder = data / FOLDER / file_folder("docs")
    folder.mkdir(parents=True)
    record = {"subject": "shared", "tokens": {"access_token": TOKEN}, "expires_at": 4e9}
    (folder / "old.sealed").write_bytes(sealer(data, None).seal(json.dumps(record).encode()))
    configure(tmp_path, "http://127.0.0.1:9/mcp")

    code, listed, err = await run(tmp_path, "mcp", "list")
    assert "  signed in: signed in (until 2096-" in listed, listed + err
    assert not list(folder.glob("*.sealed"))
    kept = await sealed_rows(data)
    assert [subject for subject, _ in kept] == ["shared"] and TOKEN.encode() not in kept[0][1]
    assert TOKEN not in listed + err
