"""``threadline healthcheck``: ask the running program's ``/healthz`` on the configured port.

For container health checks: it reads the same settings as ``threadline run``
(``THREADLINE_HTTP_HOST``, ``THREADLINE_HTTP_PORT``), so the check follows the port. Docker runs
it every 30 s, so it asks with the standard library's HTTP client, imported in a few ms, rather
than starting an event loop and aiohttp.
"""

from __future__ import annotations

import http.client
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.config import Settings

TIMEOUT_S = 5.0
_WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


def healthz_url(settings: Settings) -> str:
    host = _host(settings)
    return f"http://{f'[{host}]' if ':' in host else host}:{settings.http_port}/healthz"


def _host(settings: Settings) -> str:
    """The address to ask: a wildcard one is asked on loopback."""
    return _WILDCARDS.get(settings.http_host, settings.http_host)


def run_healthcheck(settings: Settings) -> int:
    """0 when ``/healthz`` answers 200 with ``"ok": true``, else 1 (with one line saying why)."""
    healthy, words = ask_healthz(settings)
    print(words, flush=True)
    return 0 if healthy else 1


def ask_healthz(settings: Settings) -> tuple[bool, str]:
    """Whether ``/healthz`` answers 200 with ``"ok": true``, and a line saying so or why not."""
    url = healthz_url(settings)
    try:
        status, body = read_healthz(settings)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return False, f"unhealthy: {url}: {type(exc).__name__}: {exc}"
    if status != 200 or not isinstance(body, dict) or body.get("ok") is not True:
        return False, f"unhealthy: {url} answered {status}: {body}"
    return True, f"healthy: {url}"


def read_healthz(settings: Settings) -> tuple[int, object]:
    """``GET /healthz``: the status and the JSON body (``OSError``, ``HTTPException`` or
    ``ValueError`` when nothing, or something else than JSON, answers)."""
    connection = http.client.HTTPConnection(_host(settings), settings.http_port, timeout=TIMEOUT_S)
    try:
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()
