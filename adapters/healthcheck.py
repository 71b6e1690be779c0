"""``threadline healthcheck``: ask the running program's ``/healthz`` on the configured port.

For container health checks: it reads the same settings as ``threadline run``
(``THREADLINE_HTTP_HOST``, ``THREADLINE_HTTP_PORT``), so the check follows the port.
"""

from __future__ import annotations

import aiohttp

from bot.config import Settings

TIMEOUT_S = 5.0
_WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}


def healthz_url(settings: Settings) -> str:
    host = settings.http_host
    host = _WILDCARDS.get(host, f"[{host}]" if ":" in host else host)
    return f"http://{host}:{settings.http_port}/healthz"


async def run_healthcheck(settings: Settings) -> int:
    """0 when ``/healthz`` answers 200 with ``"ok": true``, else 1 (with one line saying why)."""
    url = healthz_url(settings)
    try:
        timeout = aiohttp.ClientTimeout(total=TIMEOUT_S)
        async with aiohttp.ClientSession(timeout=timeout) as http, http.get(url) as response:
            body = await response.json(content_type=None)
            healthy = response.status == 200 and isinstance(body, dict) and body.get("ok") is True
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        print(f"unhealthy: {url}: {type(exc).__name__}: {exc}", flush=True)
        return 1
    if not healthy:
        print(f"unhealthy: {url} answered {response.status}: {body}", flush=True)
        return 1
    print(f"healthy: {url}", flush=True)
    return 0
