"""``threadline doctor`` for Discord, and ``threadline discord-invite``."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from adapters.cli import main
from adapters.discord.doctor import REFUSED, check_discord
from adapters.discord.invite import INTENT_HELP, client_id_from_token
from tests.adapters.discord.conftest import ENV, discord_settings
from tests.fakes.discord import FakeDiscord, FastClock, bot_token

PERMISSIONS = (1 << 10) | (1 << 11) | (1 << 16) | (1 << 35) | (1 << 38) | (1 << 51)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers  # the CLI installs its own handler on this test's stderr
    root.setLevel(level)


async def test_doctor_names_the_bot_and_finds_the_intent(fake: FakeDiscord, tmp_path: Path) -> None:
    checks = await check_discord(discord_settings(fake))
    assert checks[0] == (True, f"token accepted: the bot is Threadline (id {fake.world.bot.id})")
    assert (True, "the Message Content intent is enabled") in checks
    assert any(ok and "gateway" in text for ok, text in checks)
    assert all(ok is not False for ok, _ in checks)
    assert all(fake.token not in text for _, text in checks)


async def test_doctor_names_the_shards_this_process_connects(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    settings = discord_settings(fake)
    assert (
        None,
        "shards: one connection for every server (no sharding; Discord recommends 1 shard "
        "for this bot)",
    ) in await check_discord(settings)
    sharded = settings.model_copy(update={"discord_shard_count": 2, "discord_shard_ids": "1"})
    assert (
        True,
        "shards: this process connects shard 1 of 2 (Discord recommends 1 shard for this "
        "bot); other processes must connect the rest",
    ) in await check_discord(sharded)
    wrong = settings.model_copy(update={"discord_shard_count": 2, "discord_shard_ids": "2"})
    failed = [text for ok, text in await check_discord(wrong) if ok is False]
    assert failed == [
        "shards: THREADLINE_DISCORD_SHARD_IDS: names shard 2, but shards are numbered "
        "0 to 1 (THREADLINE_DISCORD_SHARD_COUNT=2)"
    ]


async def test_doctor_says_how_to_switch_the_intent_on(clock: FastClock, tmp_path: Path) -> None:
    fake = FakeDiscord(clock, app_flags=1 << 19)  # the "limited" flag counts as on
    fake.world.interactions_endpoint_url = "https://example.com/interactions"
    await fake.start()
    try:
        assert (True, "the Message Content intent is enabled") in await check_discord(
            discord_settings(fake)
        )
        fake.world.app_flags = 0
        checks = await check_discord(discord_settings(fake))
    finally:
        await fake.close()
    failed = [text for ok, text in checks if ok is False]
    assert len(failed) == 2
    assert INTENT_HELP in failed[0] and "Message Content Intent" in failed[0]
    assert "Interactions Endpoint URL" in failed[1]


async def test_doctor_explains_a_refused_token(fake: FakeDiscord, tmp_path: Path) -> None:
    wrong = bot_token(42)
    settings = discord_settings(fake).model_copy(update={"discord_token": SecretStr(wrong)})
    checks = await check_discord(settings)
    assert checks == [(False, REFUSED)]
    assert wrong not in REFUSED


async def test_doctor_says_when_discord_cannot_be_reached(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = discord_settings(fake).model_copy(
        update={"discord_api_base": f"http://127.0.0.1:{port}/api"}
    )
    checks = await check_discord(settings)
    assert len(checks) == 1 and checks[0][0] is False
    assert f"could not reach Discord at http://127.0.0.1:{port}/api/v10" in checks[0][1]


def test_the_client_id_comes_from_the_token() -> None:
    assert client_id_from_token(bot_token(1234567890123)) == 1234567890123
    assert client_id_from_token("not-base64!.x.y") is None
    assert client_id_from_token("aGVsbG8.x.y") is None  # base64, but not an id


def test_discord_invite_prints_the_link_permissions_and_intent(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DISCORD_TOKEN", bot_token(987654321098765432))
    assert main(["discord-invite"]) == 0
    out = capsys.readouterr().out
    assert (
        "https://discord.com/oauth2/authorize?client_id=987654321098765432"
        f"&scope=bot+applications.commands&permissions={PERMISSIONS}"
    ) in out
    assert (
        "View Channels, Send Messages, Send Messages in Threads, Create Public Threads, "
        "Read Message History, Pin Messages"
    ) in out
    assert "Manage Messages" not in out
    assert INTENT_HELP in out
    assert "https://discord.com/developers/applications/987654321098765432/bot" in out


async def test_discord_invite_asks_discord_when_the_token_does_not_say(
    clock: FastClock, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from adapters.discord.invite import print_invite

    fake = FakeDiscord(clock, token="opaque-token.without.id")
    await fake.start()
    try:
        settings = discord_settings(fake)
        assert await print_invite(settings) == 0
    finally:
        await fake.close()
    assert f"client_id={fake.world.app_id}&" in capsys.readouterr().out


def test_discord_invite_without_a_token_says_what_to_set(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["discord-invite"]) == 2
    assert "DISCORD_TOKEN" in capsys.readouterr().out
