"""Model names to their own servers, and the models asked when one cannot answer.

A model name listed in ``[per_model."NAME"]`` is answered by its own client (its server, its
key); every other name by the default one (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``).
``THREADLINE_FALLBACK_MODELS`` names the models asked in turn when the thread's model cannot
answer: no quota left, server errors after the client's retries, time-outs and unreachable
servers, a rate limit that did not lift — never a refused request (a 400, a bad key, a context
too long), which another model would refuse as well.

A model falls over only before it has streamed anything: once the thread shows part of its
answer, its failure is the run's. The model that answers after another failed first streams a
:class:`NoticePiece` saying so; when none can, :class:`FallbacksFailed` says how each failed.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

from bot.config import Settings
from bot.errors import (
    FallbacksFailed,
    ModelError,
    ModelRateLimited,
    ModelRejected,
    ModelServerError,
    ModelStreamBroken,
    ModelUnavailable,
)
from bot.llm.model import Model, ModelPiece, ModelRequest, NoticePiece, WaitPiece

log = logging.getLogger(__name__)

OPENAI_BASE_URL = "https://api.openai.com/v1"
API_NAMES = {"chat": "Chat Completions", "responses": "the Responses API"}
NO_KEY = "not-needed"
"""What a server without authentication (Ollama, vLLM) is sent as its key."""


@dataclass(frozen=True, slots=True)
class Route:
    """Where one model name is asked, and with which key."""

    model: str
    base_url: str
    api_key: str
    key_name: str
    """Where the key came from, for messages (``LOCAL_KEY``, ``no key``)."""
    url_name: str
    """Where the server was set, for messages."""
    api: Literal["chat", "responses"] = "chat"
    """Chat Completions or the Responses API."""


def route_of(settings: Settings, name: str) -> Route:
    """The route ``[per_model."NAME"]`` gives ``name``; ``OPENAI_API_KEY`` goes only to the
    default server."""
    own = settings.per_model[name]
    return replace(_route(settings, name), api=own.openai_api or settings.openai_api)


def _route(settings: Settings, name: str) -> Route:
    own = settings.per_model[name]
    default_url = settings.openai_base_url or OPENAI_BASE_URL
    base_url = own.base_url or default_url
    where = f'per_model."{name}"'
    url_name = f"{where}.base_url" if own.base_url else "OPENAI_BASE_URL"
    if own.api_key_env is not None:
        key = settings.route_key(name)
        return Route(
            name, base_url, key.get_secret_value() if key else NO_KEY, own.api_key_env, url_name
        )
    default_key = settings.openai_api_key
    if base_url == default_url and default_key is not None:
        return Route(name, base_url, default_key.get_secret_value(), "OPENAI_API_KEY", url_name)
    return Route(name, base_url, NO_KEY, f"{where}.api_key_env", url_name)


def describe_route(route: Route) -> str:
    """Where a route asks and with which key, named but never shown (for ``threadline doctor``)."""
    parts = urlsplit(route.base_url)
    host = parts.hostname or ""
    where = urlunsplit(
        (parts.scheme, f"{host}:{parts.port}" if parts.port else host, parts.path, "", "")
    )
    key = "no key" if route.api_key == NO_KEY else f"the key in {route.key_name}"
    return (
        f"model {route.model} at {where} ({route.url_name}) with {key} over {API_NAMES[route.api]}"
    )


def falls_over(error: ModelError) -> bool:
    """Whether another model may answer where this error stopped one."""
    if isinstance(error, ModelRejected):
        return error.status == 429  # the account has no quota left
    return isinstance(
        error, ModelServerError | ModelUnavailable | ModelRateLimited | ModelStreamBroken
    )


def why(error: ModelError) -> str:
    """A few words for why a model did not answer (``server error 503``)."""
    match error:
        case ModelRejected(status=429):
            return "no quota left"
        case ModelRateLimited():
            return "rate-limited"
        case ModelServerError(status=int(status)):
            return f"server error {status}"
        case ModelServerError():
            return "server error"
        case ModelUnavailable(status=408):
            return "timed out"
        case ModelUnavailable() if "within" in str(error):
            return "timed out"
        case ModelUnavailable():
            return "unreachable"
        case ModelStreamBroken():
            return "its answer broke off"
    return str(error)[:120]


def answered_by(failed: Sequence[tuple[str, str]], name: str) -> str:
    """``gpt-4o did not answer (server error 503); answered by llama3.1``."""
    said = "; ".join(f"{model} did not answer ({reason})" for model, reason in failed)
    return f"{said}; answered by {name}"


class RoutedModel:
    """One model client per route, and the fallbacks asked in turn (see the module)."""

    def __init__(
        self, default: Model, routes: Mapping[str, Model], fallbacks: Sequence[str]
    ) -> None:
        self._default = default
        self._routes = dict(routes)
        self._fallbacks = tuple(fallbacks)

    @property
    def name(self) -> str:
        return self._default.name

    @property
    def label(self) -> str:
        return self._default.label

    @property
    def fallbacks(self) -> tuple[str, ...]:
        return self._fallbacks

    def route(self, name: str) -> Model:
        """The client that answers the model ``name``."""
        return self._routes.get(name, self._default)

    def order(self, name: str) -> list[str]:
        """The models asked for a request to ``name``: it, then each fallback once."""
        return list(dict.fromkeys((name, *self._fallbacks)))

    async def aclose(self) -> None:
        for model in {id(m): m for m in (self._default, *self._routes.values())}.values():
            await model.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        first = request.model or self.name
        names = self.order(first)
        failed: list[tuple[str, str]] = []
        for position, name in enumerate(names):
            asked = request if name == first else replace(request, model=name)
            started = False
            pieces = self.route(name).stream(asked)
            try:
                async for piece in pieces:
                    if isinstance(piece, WaitPiece):  # a wait before the answer: not started
                        yield piece
                        continue
                    if not started and failed:
                        yield NoticePiece(answered_by(failed, name))
                    started = True
                    yield piece
                return
            except ModelError as exc:
                if started or not falls_over(exc):
                    raise
                failed.append((name, why(exc)))
                if position + 1 == len(names):
                    if len(failed) == 1:
                        raise
                    raise FallbacksFailed(tuple(failed)) from exc
                log.warning(
                    "model %s did not answer (%s); asking %s", name, exc, names[position + 1]
                )
            finally:
                if (close := getattr(pieces, "aclose", None)) is not None:
                    await close()


M = TypeVar("M", bound=Model)


def routed(settings: Settings, default: M, make: Callable[[Route], Model]) -> M | RoutedModel:
    """``default`` alone, or a :class:`RoutedModel` when models have routes or fallbacks."""
    own = [name for name, model in settings.per_model.items() if model.routed]
    if not own and not settings.fallback_models:
        return default
    routes = {name: make(route_of(settings, name)) for name in own}
    return RoutedModel(default, routes, settings.fallback_models)
