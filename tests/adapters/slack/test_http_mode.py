"""HTTP mode: signed events and clicks at POST /slack/events on the shared server."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from adapters.slack.adapter import SlackAdapter
from bot.errors import ConfigError
from tests.adapters.slack.conftest import HeldModel, World, echo, slack_world
from tests.fakes.config import configure
from tests.fakes.scripted_model import ScriptedModel
from tests.fakes.slack import BOT_TOKEN, MENTION, SIGNING_SECRET
from tests.fakes.slack import payloads as slack_payloads
from tests.fakes.slack.delivery import sign

SECRET_WORDS = "the-password-is-swordfish"


@pytest.fixture
async def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[World]:
    async with slack_world(tmp_path, monkeypatch, mode="http") as world:
        yield world


async def test_a_mention_a_continuation_and_a_click_over_http(world: World) -> None:
    root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} hello over http")
    assert [m.shown for m in await world.answered(root)] == ["Ada said: hello over http"]
    await world.fake.say("UGRACE", "CGENERAL", "and me", thread_ts=root.ts)
    assert [m.shown for m in await world.answered(root, 2)][-1] == "Grace said: and me"
    assert all(d.status == 200 and d.acked_in_time for d in world.fake.deliveries)
    assert world.fake.count("apps.connections.open") == 0


async def test_forged_and_stale_signatures_are_refused_unread_and_unlogged(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    event = {
        "type": "app_mention",
        "user": "UADA",
        "text": f"{MENTION} {SECRET_WORDS}",
        "ts": "1700000000.000100",
        "channel": "CGENERAL",
        "event_ts": "1700000000.000100",
    }
    for how in ({"forge": True}, {"stale": True}):
        delivery = await world.fake.deliver_event(event, **how)
        assert delivery.status == 401
    await world.idle()
    assert world.model.requests == []
    assert world.fake.replies("CGENERAL", "1700000000.000100") == []
    assert not await world.runtime.core.has_session("slack:T0FAKE:CGENERAL:1700000000.000100")  # type: ignore[union-attr, arg-type]
    assert SECRET_WORDS not in caplog.text
    assert "invalid or stale signature" in caplog.text


async def test_requests_without_or_with_garbled_signature_headers_are_refused(world: World) -> None:
    assert world.fake.http_target is not None
    body = b'{"type": "event_callback"}'
    cases = [
        {},
        {"X-Slack-Request-Timestamp": "yesterday", "X-Slack-Signature": "v0=abc"},
        {"X-Slack-Request-Timestamp": str(int(time.time())), "X-Slack-Signature": "v0=00"},
    ]
    async with aiohttp.ClientSession() as http:
        for headers in cases:
            async with http.post(world.fake.http_target, data=body, headers=headers) as response:
                assert response.status == 401


async def test_url_verification_and_unreadable_signed_bodies(world: World) -> None:
    assert world.fake.http_target is not None
    async with aiohttp.ClientSession() as http:
        for body, expected in [
            (
                json.dumps(
                    {"type": "url_verification", "challenge": "abc123", "token": "x"}
                ).encode(),
                "abc123",
            ),
            (b"{not json", ""),
        ]:
            timestamp = str(int(time.time()))
            headers = {
                "Content-Type": "application/json",
                "X-Slack-Request-Timestamp": timestamp,
                "X-Slack-Signature": sign(SIGNING_SECRET, timestamp, body),
            }
            async with http.post(world.fake.http_target, data=body, headers=headers) as response:
                assert response.status == 200
                assert expected in await response.text()


async def test_a_redelivery_with_retry_headers_is_acknowledged_and_answered_once(
    world: World,
) -> None:
    root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} once")
    await world.answered(root)
    for delivery in [
        d for d in world.fake.deliveries if d.payload.get("event", {}).get("ts") == root.ts
    ]:
        for _ in range(3):
            again = await world.fake.redeliver(delivery)
            assert again.status == 200 and again.acked_in_time
    await world.idle()
    assert len(world.model.requests) == 1
    assert len(world.fake.replies("CGENERAL", root.ts)) == 1


async def test_events_are_acknowledged_fast_while_the_core_is_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = HeldModel(ScriptedModel([], respond=echo), hold_after=1)
    async with slack_world(tmp_path, monkeypatch, mode="http", model=model) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} take your time")
        await world.fake.wait_for(lambda: bool(world.fake.replies("CGENERAL", root.ts)))
        other = await world.fake.say("UGRACE", "CGENERAL", f"{MENTION} a second thread")
        await world.fake.say("UGRACE", "CGENERAL", "more", thread_ts=root.ts)
        # Slack's deadline; an ack that waited for the held model would come only after release().
        # Each delivery answered first: the new reply under the steered "more" is itself delivered.
        await world.fake.wait_for(
            lambda: all(d.status is not None for d in world.fake.deliveries), 3.0
        )
        assert all(d.status == 200 and (d.acked_in or 9) < 3.0 for d in world.fake.deliveries)
        model.release()
        await world.answered(other)
        await world.fake.wait_for(
            lambda: world.fake.replies("CGENERAL", root.ts)[-1].shown == "Grace said: more"
        )


async def test_a_bot_message_event_from_another_bot_over_http_is_ignored(world: World) -> None:
    message = world.fake.workspace.post(
        "CGENERAL", None, f"{MENTION} hi", bot_id="BOTHER", subtype="bot_message"
    )
    channel = world.fake.workspace.channels["CGENERAL"]
    assert (
        await world.fake.deliver_event(slack_payloads.message_event(message, channel))
    ).status == 200
    await world.idle()
    assert world.model.requests == []


def test_http_mode_needs_the_signing_secret(tmp_path: Path) -> None:
    settings, platforms = configure(data_dir=tmp_path, slack_bot_token=BOT_TOKEN)
    with pytest.raises(ConfigError) as error:
        SlackAdapter(None, settings, platforms.slack)  # type: ignore[arg-type]
    assert error.value.setting == "SLACK_SIGNING_SECRET"
