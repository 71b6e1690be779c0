"""Every HTTP request a platform adapter makes, counted for ``/metrics``: an aiohttp trace on
the adapter's HTTP session (the one road each SDK's calls take), named by the adapter."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace

import aiohttp
from yarl import URL

from adapters.playground.access import is_loopback
from bot.config import Settings
from bot.infra import metrics

Namer = Callable[[str, URL], str]
"""The metric's ``method`` label for a request (HTTP method, URL): a bounded name, no ids."""


def request_trace(platform: str, name_of: Namer) -> aiohttp.TraceConfig:
    """A trace that counts each request's outcome, 429s and time under ``name_of``'s name."""

    async def start(
        session: aiohttp.ClientSession,
        context: SimpleNamespace,
        params: aiohttp.TraceRequestStartParams,
    ) -> None:
        context.threadline_began = time.perf_counter()

    async def end(
        session: aiohttp.ClientSession,
        context: SimpleNamespace,
        params: aiohttp.TraceRequestEndParams,
    ) -> None:
        _count(context, name_of(params.method, params.url), params.response.status)

    async def failed(
        session: aiohttp.ClientSession,
        context: SimpleNamespace,
        params: aiohttp.TraceRequestExceptionParams,
    ) -> None:
        _count(context, name_of(params.method, params.url), None)

    def _count(context: SimpleNamespace, name: str, status: int | None) -> None:
        began = getattr(context, "threadline_began", None)
        seconds = time.perf_counter() - began if began is not None else 0.0
        metrics.platform_request(platform, name, status, seconds)

    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(start)
    trace.on_request_end.append(end)
    trace.on_request_exception.append(failed)
    return trace


def describe_metrics(settings: Settings) -> tuple[bool | None, str]:
    """``threadline doctor``'s line on ``/metrics``: where it is served and who may read it."""
    where = f"http://{settings.http_host}:{settings.http_port}/metrics"
    token = settings.metrics_token
    if token is not None and token.get_secret_value():
        return (
            True,
            f"metrics: {where}, for requests with the bearer token THREADLINE_METRICS_TOKEN",
        )
    if is_loopback(settings.http_host):
        return None, f"metrics: {where}, readable from this machine only"
    return None, (
        f"metrics: {where} answers anyone who reaches the port (counts only: no ids, no text); "
        "set THREADLINE_METRICS_TOKEN to require a bearer token"
    )
