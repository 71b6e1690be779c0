"""Configuration, `threadline doctor` for Slack, secrets kept out of logs, and the manifests."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from pydantic import ValidationError

from adapters.platforms import Platforms
from adapters.runtime import Runtime
from adapters.slack.adapter import SlackAdapter
from adapters.slack.doctor import check_slack
from adapters.slack.scopes import BOT_EVENTS, BOT_SCOPES, DM_SCOPE, GROUP_SCOPE, OPTIONAL_SCOPES
from bot.api.shortcuts import SHORTCUTS, callback_id
from bot.config import Settings
from bot.errors import ConfigError
from tests.adapters.slack.conftest import PLATFORM_ENV, slack_world
from tests.fakes.config import configure
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, MENTION, SIGNING_SECRET, FakeSlack
from tests.fakes.slack.server import ALL_SCOPES

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PLATFORM_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    fake = FakeSlack()
    await fake.start()
    yield fake
    await fake.stop()


def settings(tmp_path: Path, **values: Any) -> tuple[Settings, Platforms]:
    return configure(data_dir=tmp_path / "data", http_port=0, playground=False, **values)


async def doctor(tmp_path: Path, **values: Any) -> list[tuple[bool | None, str]]:
    core, platforms = settings(tmp_path, **values)
    return await check_slack(core, platforms.slack)


@pytest.mark.parametrize(
    ("values", "culprit"),
    [
        ({"slack_bot_token": BOT_TOKEN}, "SLACK_SIGNING_SECRET"),
        ({"slack_bot_token": BOT_TOKEN, "slack_signing_secret": "  "}, "SLACK_SIGNING_SECRET"),
        ({"slack_bot_token": APP_TOKEN, "slack_app_token": APP_TOKEN}, "SLACK_BOT_TOKEN"),
        ({"slack_bot_token": BOT_TOKEN, "slack_app_token": BOT_TOKEN}, "SLACK_APP_TOKEN"),
        ({"slack_bot_token": "", "slack_app_token": APP_TOKEN}, "SLACK_BOT_TOKEN"),
        ({"slack_bot_token": "xoxp-1-user-token", "slack_app_token": APP_TOKEN}, "SLACK_BOT_TOKEN"),
        (
            {"slack_bot_token": "1111-2222-no-prefix", "slack_app_token": APP_TOKEN},
            "SLACK_BOT_TOKEN",
        ),
    ],
)
def test_invalid_combinations_name_the_setting(
    tmp_path: Path, values: dict[str, Any], culprit: str
) -> None:
    with pytest.raises(ConfigError) as error:
        core, platforms = settings(tmp_path, **values)
        SlackAdapter(None, core, platforms.slack)  # type: ignore[arg-type]
    assert error.value.setting == culprit
    assert all(secret not in str(error.value) for secret in (BOT_TOKEN, APP_TOKEN))


@pytest.mark.parametrize(
    ("values", "culprit"),
    [
        (
            {"slack_bot_token": "xoxb-not-the-right-one", "slack_app_token": APP_TOKEN},
            "SLACK_BOT_TOKEN",
        ),
        (
            {"slack_bot_token": BOT_TOKEN, "slack_app_token": "xapp-1-not-the-right-one"},
            "SLACK_APP_TOKEN",
        ),
    ],
)
async def test_a_refused_token_stops_the_start_in_plain_words(
    tmp_path: Path, fake: FakeSlack, values: dict[str, Any], culprit: str
) -> None:
    core, platforms = settings(tmp_path, slack_api_url=fake.api_url, **values)
    runtime = Runtime(core, platforms=platforms)
    with pytest.raises(ConfigError) as error:
        await runtime.start()
    await runtime.stop()
    assert error.value.setting == culprit and "invalid_auth" in error.value.problem


async def test_doctor_with_good_tokens(tmp_path: Path, fake: FakeSlack) -> None:
    lines = await doctor(tmp_path, **fake.settings())
    assert [ok for ok, _ in lines if ok is not None] == [True] * 7
    text = "\n".join(t for _, t in lines)
    assert "@threadline in workspace Fake Workspace (T0FAKE)" in text
    assert "Socket Mode can connect" in text
    assert "threadline_stop, threadline_status, threadline_quiet, threadline_reset" in text
    assert BOT_TOKEN not in text and APP_TOKEN not in text


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("auto", "when a stream can start at once"),
        ("native", "whenever Slack allows"),
        ("edit", "by editing one message"),
    ],
)
async def test_doctor_says_how_answers_stream(
    tmp_path: Path, fake: FakeSlack, mode: str, words: str
) -> None:
    lines = await doctor(tmp_path, **fake.settings(), slack_streaming=mode)
    line = next(text for _, text in lines if "THREADLINE_SLACK_STREAMING" in text)
    assert words in line and f"THREADLINE_SLACK_STREAMING={mode}" in line


@pytest.mark.parametrize(
    ("values", "ok", "words"),
    [
        (
            {},
            True,
            "48 chat.update a minute for the workspace (THREADLINE_SLACK_EDITS_PER_MINUTE), for this one process",
        ),
        (
            {"database_url": "postgresql://threadline@db.example/threadline"},
            True,
            "shared by every worker on THREADLINE_DATABASE_URL",
        ),
        ({"slack_edits_per_minute": 80.0}, None, "Slack allows about 50: expect 429s"),
    ],
)
async def test_doctor_says_how_fast_replies_are_edited_and_who_shares_it(
    tmp_path: Path, fake: FakeSlack, values: dict[str, Any], ok: bool | None, words: str
) -> None:
    lines = await doctor(tmp_path, **fake.settings(), **values)
    line = next((mark, text) for mark, text in lines if "THREADLINE_SLACK_EDITS_PER_MINUTE" in text)
    assert line[0] is ok and words in line[1], line


@pytest.mark.parametrize(
    ("values", "ok", "words"),
    [
        ({}, True, "posts: 45 chat.postMessage a minute in each channel"),
        ({"slack_posts_per_minute": 90.0}, None, "Slack allows about one a second"),
    ],
)
async def test_doctor_says_how_fast_replies_post_in_a_channel(
    tmp_path: Path, fake: FakeSlack, values: dict[str, Any], ok: bool | None, words: str
) -> None:
    lines = await doctor(tmp_path, **fake.settings(), **values)
    line = next((mark, text) for mark, text in lines if "THREADLINE_SLACK_POSTS_PER_MINUTE" in text)
    assert line[0] is ok and words in line[1], line


def test_an_unknown_streaming_mode_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as error:
        settings(tmp_path, slack_streaming="sometimes")
    assert "slack_streaming" in str(error.value)


async def test_doctor_with_a_wrong_bot_token(tmp_path: Path, fake: FakeSlack) -> None:
    lines = await doctor(tmp_path, **{**fake.settings(), "slack_bot_token": "xoxb-wrong"})
    assert (
        lines[-1][0] is False
        and "SLACK_BOT_TOKEN" in lines[-1][1]
        and "invalid_auth" in lines[-1][1]
    )


async def test_doctor_lists_missing_scopes_and_a_wrong_app_token(tmp_path: Path) -> None:
    fake = FakeSlack(scopes=ALL_SCOPES - {"pins:write", "users:read"})
    await fake.start()
    try:
        values = {**fake.settings(), "slack_app_token": "xapp-1-wrong"}
        lines = await doctor(tmp_path, **values)
    finally:
        await fake.stop()
    failures = [t for ok, t in lines if ok is False]
    assert any("missing scopes: pins:write, users:read" in t for t in failures)
    assert any("SLACK_APP_TOKEN" in t for t in failures)


async def test_doctor_asks_for_usergroups_read_only_when_groups_decide(tmp_path: Path) -> None:
    fake = FakeSlack(scopes=ALL_SCOPES - {GROUP_SCOPE})
    await fake.start()
    try:
        plain = await doctor(tmp_path, **fake.settings())
        by_group = {"tools": {"deploy": {"approvers": {"roles": ["slack:group:SOPS"]}}}}
        grouped = await doctor(tmp_path, **fake.settings(), **by_group)
    finally:
        await fake.stop()
    assert all(ok is not False for ok, _ in plain)
    assert any(ok is False and f"missing scopes: {GROUP_SCOPE}" in t for ok, t in grouped)


async def test_doctor_asks_for_im_write_only_when_approvers_are_told(tmp_path: Path) -> None:
    fake = FakeSlack(scopes=ALL_SCOPES - {DM_SCOPE})
    await fake.start()
    try:
        plain = await doctor(tmp_path, **fake.settings())
        listed = {"tools": {"deploy": {"approvers": {"users": ["slack:UGRACE"]}}}}
        told = await doctor(tmp_path, **fake.settings(), **listed)
    finally:
        await fake.stop()
    assert all(ok is not False for ok, _ in plain)
    assert not any(DM_SCOPE in t for _, t in plain)
    assert any(ok is False and f"missing scope {DM_SCOPE}" in t for ok, t in told)


async def test_doctor_names_the_optional_scopes_missing_and_does_not_fail_on_them(
    tmp_path: Path,
) -> None:
    fake = FakeSlack(scopes=ALL_SCOPES - set(OPTIONAL_SCOPES))
    await fake.start()
    try:
        without = await doctor(tmp_path, **fake.settings())
    finally:
        await fake.stop()
    assert all(ok is not False for ok, _ in without)
    (said,) = [t for _, t in without if "optional scopes" in t]
    assert "channels:read (the names of public channels" in said and "groups:read" in said


async def test_doctor_in_http_mode_and_when_slack_is_unreachable(
    tmp_path: Path, fake: FakeSlack
) -> None:
    http = {
        "slack_bot_token": BOT_TOKEN,
        "slack_signing_secret": SIGNING_SECRET,
        "slack_api_url": fake.api_url,
    }
    lines = await doctor(tmp_path, **http)
    assert lines[-1][0] is None and "/slack/events" in lines[-1][1]
    await fake.stop()
    lines = await doctor(tmp_path, **http)
    assert lines[-1][0] is False and "could not reach" in lines[-1][1]
    assert (await doctor(tmp_path, slack_bot_token=BOT_TOKEN))[0][0] is False


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_secrets_never_reach_the_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, mode: str
) -> None:
    caplog.set_level(logging.DEBUG)
    async with slack_world(tmp_path, monkeypatch, mode=mode) as world:  # type: ignore[arg-type]
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} hello")
        await world.answered(root)
        await world.fake.deliver_event({"type": "app_mention"}, forge=mode == "http")
        await check_slack(world.settings, world.platforms.slack)
    assert "Sending a request" in caplog.text  # the SDK's debug logging was on
    for secret in (BOT_TOKEN, APP_TOKEN, SIGNING_SECRET):
        assert secret not in caplog.text


def _listed(manifest: str, key: str) -> set[str]:
    """The items of a block list ``key:`` in a small YAML file."""
    match = re.search(rf"^(\s*){re.escape(key)}:\n((?:\1\s+- .+\n)+)", manifest, re.MULTILINE)
    assert match, key
    return {line.strip()[2:].strip() for line in match.group(2).splitlines()}


@pytest.mark.parametrize(("name", "socket"), [("socket", "true"), ("http", "false")])
def test_the_manifests_ask_for_exactly_what_the_bot_uses(name: str, socket: str) -> None:
    manifest = (ROOT / "deploy" / f"slack-manifest.{name}.yaml").read_text()
    assert _listed(manifest, "bot") == BOT_SCOPES | {GROUP_SCOPE, DM_SCOPE} | set(OPTIONAL_SCOPES)
    assert _listed(manifest, "bot_events") == BOT_EVENTS
    assert f"socket_mode_enabled: {socket}" in manifest
    assert re.search(r"interactivity:\n\s+is_enabled: true", manifest)
    assert ("request_url: https://" in manifest) == (name == "http")
    declared = re.findall(r"^\s+callback_id: (\S+)$", manifest, re.MULTILINE)
    assert declared == [callback_id(s) for s in SHORTCUTS]
    assert manifest.count("type: message") == len(SHORTCUTS)  # message shortcuts, not global
    assert "home_tab_enabled: true" in manifest  # the Home tab (app_home_opened)
    assert re.search(r"assistant_view:\n\s+assistant_description: \S", manifest)


async def test_healthz_and_readyz_say_whether_slack_is_connected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with slack_world(tmp_path, monkeypatch) as world, aiohttp.ClientSession() as http:
        assert world.runtime is not None
        url = world.runtime.url
        async with http.get(f"{url}/healthz") as resp:
            assert resp.status == 200
            assert (await resp.json())["adapters"] == {"slack": "connected"}
        async with http.get(f"{url}/readyz") as resp:
            assert resp.status == 200 and (await resp.json()) == {"ready": True, "waiting": {}}
        world.fake.api.tokens.app = "xapp-revoked"  # the link cannot come back
        await world.fake.socket.drop()

        async def down() -> bool:
            async with http.get(f"{url}/readyz") as resp:
                return resp.status == 503

        for _ in range(500):  # a condition, polled: the client notices the drop by itself
            if await down():
                break
            await asyncio.sleep(0.01)
        async with http.get(f"{url}/readyz") as resp:
            assert resp.status == 503
            assert "Socket Mode link is down" in (await resp.json())["waiting"]["slack"]
        async with http.get(f"{url}/healthz") as resp:
            body = await resp.json()
            assert resp.status == 200 and body["ok"] is False
