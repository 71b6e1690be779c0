"""``threadline doctor``'s look at the model server: one short request, its retries folded into
the line, and when the server refuses it, whether the URL is an OpenAI-compatible API at all.

A server that is not one (a web page, Ollama's root without ``/v1``) answers the chat request
404, which reads as "does not know the model"; ``GET <url>/models`` tells the two apart, and
``GET <url>/v1/models`` finds the ``/v1`` that was left out.
"""

from __future__ import annotations

import difflib
import json
import random
from urllib.parse import urlsplit

import aiohttp

from bot.config import Settings
from bot.errors import ModelError, ModelRejected, ModelStreamBroken
from bot.infra.clock import SystemClock
from bot.llm.first_token import FirstTokenLimit
from bot.llm.messages import UserMessage
from bot.llm.model import ModelRequest, TextPiece
from bot.llm.openai_model import build_openai_model, safe_url
from bot.llm.routing import OPENAI_BASE_URL, RoutedModel

Line = tuple[bool, str]
Hint = tuple[bool | None, str]
PROBE_TIMEOUT_S = 10.0
SHOWN_MODELS = 8
DEMO = "model: the offline demo model (no OPENAI_API_KEY or OPENAI_BASE_URL)"
_REQUEST = ModelRequest(
    system="You are a health check.",
    messages=[UserMessage(text="Reply with the single word OK.")],
    tools=(),
    max_tokens=5,
)


async def check_model(settings: Settings) -> list[Line | Hint]:
    """Ask the configured model for one word, under the first-token timeout the bot uses: the
    line saying it answered or why not, then how soon its answer began."""
    retries: list[ModelError] = []
    clock = SystemClock()
    limit = settings.model_first_token_timeout_s
    model = build_openai_model(
        settings, clock, rng=random.Random(), on_retry=lambda e, n, s: retries.append(e)
    )
    alone = model.route(model.name) if isinstance(model, RoutedModel) else model  # no fallback
    where = safe_url(settings.openai_base_url) if settings.openai_base_url else "the OpenAI API"
    name = DEMO if settings.uses_demo_model else f"model {model.label} at {where}"
    began, first, answered = clock.monotonic(), None, 0
    try:
        async for piece in FirstTokenLimit(alone, clock, limit).stream(_REQUEST):
            first = clock.monotonic() - began if first is None else first
            answered += len(piece.text) if isinstance(piece, TextPiece) else 0
    except ModelError as exc:
        words = await _why(settings, exc) if not settings.uses_demo_model else str(exc)
        return [(False, f"model {model.label}: {words}{_tries(retries)}")]
    finally:
        await model.aclose()
    said = f"{name} answered ({answered} characters){_after(retries)}"
    return [(True, said), _first_token(first or 0.0, limit)]


def _first_token(waited: float, limit: float) -> Hint:
    """How soon the model began, against ``THREADLINE_MODEL_FIRST_TOKEN_TIMEOUT_S``."""
    words = (
        f"model: its answer began after {waited:.1f} s; a run whose model sends nothing for "
        f"{limit:g} s ends with a note (THREADLINE_MODEL_FIRST_TOKEN_TIMEOUT_S)"
    )
    if waited > limit / 2:
        return None, f"{words}: close to it, raise it if this server is often slow to begin"
    return True, words


def _after(retries: list[ModelError]) -> str:
    if not retries:
        return ""
    return f", after {len(retries)} {'retry' if len(retries) == 1 else 'retries'} ({retries[-1]})"


def _tries(retries: list[ModelError]) -> str:
    return f" (tried {len(retries) + 1} times)" if retries else ""


async def _why(settings: Settings, error: ModelError) -> str:
    """The error, or what is wrong with the URL when the server is no OpenAI-compatible API."""
    refused = isinstance(error, ModelRejected) and error.status not in (401, 403)
    if not (refused or isinstance(error, ModelStreamBroken)):
        return str(error)
    base = (settings.openai_base_url or OPENAI_BASE_URL).rstrip("/")
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    async with aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=PROBE_TIMEOUT_S),
        headers={"Authorization": f"Bearer {key}"} if key else None,
    ) as session:
        status, models = await _models(session, base)
        if models is not None:
            return _unknown_model(str(error), settings.model, models, error)
        if status is None:  # nothing to tell from
            return str(error)
        said = f"the server at {safe_url(base)} answered {status} at /models: not an OpenAI-compatible API"
        if not urlsplit(base).path.endswith("/v1"):
            _, nested = await _models(session, base + "/v1")
            if nested is not None:
                return f"{said}; its /v1/models answers: set OPENAI_BASE_URL={safe_url(base)}/v1"
    return f"{said}; check OPENAI_BASE_URL (Ollama's is http://HOST:11434/v1)"


def _unknown_model(said: str, name: str, models: list[str], error: ModelError) -> str:
    """An OpenAI-compatible server refused the request: when it does not list the model, which
    it does list (all of a few, else the nearest names)."""
    if error.status != 404 or name in models or not models:
        return said
    if len(models) <= SHOWN_MODELS:
        return f"{said} It lists: {', '.join(models)}"
    near = difflib.get_close_matches(name, models, n=3, cutoff=0.5)
    nearest = f"; the nearest: {', '.join(near)}" if near else ""
    return f"{said} It lists {len(models)} models{nearest}"


async def _models(session: aiohttp.ClientSession, base: str) -> tuple[str | None, list[str] | None]:
    """``GET base/models``: (what it answered, in words, None when nothing did; the model ids
    when it is the OpenAI list, else None)."""
    try:
        async with session.get(f"{base}/models") as response:
            body = await response.read()
            kind = response.content_type
    except (aiohttp.ClientError, TimeoutError, OSError, ValueError):
        return None, None
    said = str(response.status) + (" with an HTML page" if "html" in kind else "")
    if response.status != 200:
        return said, None
    try:
        listed = json.loads(body)["data"]
        return said, [str(m["id"]) for m in listed if isinstance(m, dict) and "id" in m]
    except (ValueError, KeyError, TypeError):
        return said, None
