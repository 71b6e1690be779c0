"""Small pieces: where discord.py is pointed, thread keys, the global pacer."""

from __future__ import annotations

import asyncio

import discord
from discord.gateway import DiscordWebSocket
from discord.http import Route

from adapters.discord.endpoints import DEFAULT_API_BASE, DEFAULT_GATEWAY, point_at, rest_base
from adapters.discord.identity import parse_key, thread_key
from adapters.discord.ratelimit import GlobalPacer
from adapters.discord.surface import translate
from bot.errors import EditRefused, MessageTooLong, SurfaceError


def test_the_api_base_gets_the_version_once() -> None:
    assert rest_base(None) == DEFAULT_API_BASE == "https://discord.com/api/v10"
    assert rest_base("http://proxy:8080/api") == "http://proxy:8080/api/v10"
    assert rest_base("http://proxy:8080/api/v9/") == "http://proxy:8080/api/v9"


def test_pointing_discord_py_elsewhere_and_back() -> None:
    try:
        point_at("http://127.0.0.1:9/api", "ws://127.0.0.1:9/gateway")
        assert Route("GET", "/users/@me").url == "http://127.0.0.1:9/api/v10/users/@me"
        assert str(DiscordWebSocket.DEFAULT_GATEWAY) == "ws://127.0.0.1:9/gateway"
    finally:
        point_at(None, None)
    assert Route.BASE == DEFAULT_API_BASE and DiscordWebSocket.DEFAULT_GATEWAY == DEFAULT_GATEWAY


def test_thread_keys_round_trip() -> None:
    assert thread_key(1, 2) == "discord:1:2" and parse_key("discord:1:2") == (1, 2)
    assert thread_key(None, 3) == "discord:dm:3" and parse_key("discord:dm:3") == (None, 3)
    for other in ("slack:T:C:1", "discord:x:1", "discord:1", "discord:1:2:3", "discord:dm:x"):
        assert parse_key(other) is None


class JumpClock:
    """Time that passes only by sleeping, at once: what the pacer makes wait, nothing else."""

    def __init__(self) -> None:
        self.mono = 100.0

    def now(self) -> float:
        return self.mono

    def monotonic(self) -> float:
        return self.mono

    async def sleep(self, seconds: float) -> None:
        self.mono += max(0.0, seconds)
        await asyncio.sleep(0)


async def test_the_pacer_allows_at_most_its_rate_in_any_second() -> None:
    clock = JumpClock()
    pacer = GlobalPacer(clock, per_second=10)
    times = []
    for _ in range(25):
        await pacer.acquire()
        times.append(clock.monotonic())
    assert all(later - earlier >= 1.0 for earlier, later in zip(times, times[10:], strict=False))
    assert times[-1] - times[0] < 2.5


class _Response:
    status = 400
    reason = "Bad Request"
    headers: dict[str, str] = {}


def _error(
    code: int, message: str, errors: dict[str, object] | None = None
) -> discord.HTTPException:
    body: dict[str, object] = {"code": code, "message": message}
    if errors:
        body["errors"] = errors
    return discord.HTTPException(_Response(), body)


def test_discord_errors_become_the_presenters_errors() -> None:
    assert isinstance(translate(_error(30046, "Maximum number of edits"), "edit"), EditRefused)
    assert isinstance(translate(_error(10008, "Unknown Message"), "edit"), EditRefused)
    too_long = _error(
        50035,
        "Invalid Form Body",
        {
            "content": {
                "_errors": [
                    {"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}
                ]
            }
        },
    )
    assert isinstance(translate(too_long, "post"), MessageTooLong)
    other = translate(_error(50001, "Missing Access"), "post a message")
    assert type(other) is SurfaceError and "could not post a message" in str(other)
