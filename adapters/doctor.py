"""``threadline doctor``: plain words about what is configured and whether it answers."""

from __future__ import annotations

import os
import random
import tempfile

from bot.clock import SystemClock
from bot.config import Settings
from bot.errors import ModelError
from bot.llm.messages import UserMessage
from bot.llm.model import ModelRequest, TextPiece
from bot.llm.openai_model import build_openai_model


def _line(ok: bool | None, text: str) -> None:
    mark = {True: "ok  ", False: "FAIL", None: "--  "}[ok]
    print(f"[{mark}] {text}", flush=True)


def _check_data_dir(settings: Settings) -> bool:
    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=settings.data_dir):
            pass
    except OSError as exc:
        _line(False, f"data directory {settings.data_dir} is not writable: {exc.strerror}")
        return False
    _line(True, f"data directory {settings.data_dir.resolve()} is writable")
    return True


async def _check_model(settings: Settings) -> bool:
    model = build_openai_model(settings, SystemClock(), rng=random.Random())
    where = settings.openai_base_url or ("the OpenAI API" if settings.openai_api_key else "offline")
    request = ModelRequest(
        system="You are a health check.",
        messages=[UserMessage(text="Reply with the single word OK.")],
        tools=(),
        max_tokens=5,
    )
    try:
        text = "".join([p.text async for p in model.stream(request) if isinstance(p, TextPiece)])
    except ModelError as exc:
        _line(False, f"model {model.label} at {where}: {exc}")
        return False
    finally:
        await model.aclose()
    _line(True, f"model {model.label} at {where} answered ({len(text)} characters)")
    return True


async def _check_platform(name: str, settings: Settings) -> list[tuple[bool | None, str]]:
    """The platform's own checks (tokens, scopes, intents); its SDK is imported only here."""
    if name == "Slack":
        from adapters.slack.doctor import check_slack

        return await check_slack(settings)
    from adapters.discord.doctor import check_discord

    return await check_discord(settings)


async def run_doctor(settings: Settings) -> int:
    _line(True, "configuration is valid")
    ok = _check_data_dir(settings)
    if settings.uses_demo_model:
        _line(None, "no OPENAI_API_KEY or OPENAI_BASE_URL: using the offline demo model")
    ok = await _check_model(settings) and ok
    for name, configured in (
        ("Slack", settings.slack_bot_token is not None),
        ("Discord", settings.discord_token is not None),
    ):
        if not configured:
            _line(None, f"{name}: not configured")
            continue
        for passed, text in await _check_platform(name, settings):
            _line(passed, f"{name}: {text}")
            ok = ok and passed is not False
    if settings.playground_enabled:
        host = os.environ.get("THREADLINE_HTTP_HOST", settings.http_host)
        _line(None, f"playground will be served on http://{host}:{settings.http_port}")
    print("all checks passed" if ok else "some checks failed", flush=True)
    return 0 if ok else 1
