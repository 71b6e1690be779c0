"""The HTTP server's address (``THREADLINE_HTTP_HOST``, ``THREADLINE_HTTP_PORT``): what a failed
bind means in words naming the setting, and ``threadline doctor``'s check that the port is free."""

from __future__ import annotations

import asyncio
import errno

from bot.config import Settings
from bot.errors import ConfigError

Check = tuple[bool | None, str]


def bind_problem(host: str, port: int, error: OSError) -> ConfigError:
    """Why the server could not listen on ``host:port``, naming the setting to change."""
    where = f"port {port} on {host}"
    if error.errno == errno.EADDRINUSE:
        return ConfigError(
            "THREADLINE_HTTP_PORT",
            f"{where} is already in use (another program, or another Threadline, listens "
            "there): stop it, or set THREADLINE_HTTP_PORT to a free port",
        )
    if error.errno == errno.EACCES:
        return ConfigError(
            "THREADLINE_HTTP_PORT",
            f"{where} may not be opened by this user (ports below 1024 need privileges): "
            "set THREADLINE_HTTP_PORT to 1024 or above",
        )
    if error.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT) or error.errno is None:
        return ConfigError(
            "THREADLINE_HTTP_HOST",
            f"{host} is not an address of this machine ({error.strerror or error}): "
            "use 127.0.0.1, 0.0.0.0 or one of its own addresses",
        )
    return ConfigError(
        "THREADLINE_HTTP_PORT", f"cannot listen on {where}: {error.strerror or error}"
    )


async def listen_once(host: str, port: int) -> None:
    """Open and close a listening socket as the HTTP server would (``OSError`` when it cannot)."""
    server = await asyncio.get_running_loop().create_server(asyncio.Protocol, host, port)
    server.close()
    await server.wait_closed()


async def check_port(settings: Settings) -> Check:
    """Whether ``threadline run`` could listen where it is told to."""
    host, port = settings.http_host, settings.http_port
    if port == 0:
        return None, f"HTTP server: on {host}, a free port chosen at start (THREADLINE_HTTP_PORT=0)"
    try:
        await listen_once(host, port)
    except OSError as exc:
        problem = bind_problem(host, port, exc)
        if problem.setting == "THREADLINE_HTTP_PORT" and exc.errno == errno.EADDRINUSE:
            return await _in_use(settings, problem)
        return False, f"HTTP server: {problem}"
    return True, f"HTTP server: port {port} on {host} is free (THREADLINE_HTTP_PORT)"


async def _in_use(settings: Settings, problem: ConfigError) -> Check:
    """A busy port: fine when a Threadline is the one there (``threadline doctor`` beside the
    running bot)."""
    if not await asyncio.to_thread(_threadline_there, settings):
        return False, f"HTTP server: {problem}"
    return (
        None,
        f"HTTP server: port {settings.http_port} on {settings.http_host} is in use by a "
        "running Threadline (its /healthz answers); another one here needs another "
        "THREADLINE_HTTP_PORT",
    )


def _threadline_there(settings: Settings) -> bool:
    """Whether what listens on the port answers ``/healthz`` as Threadline does, healthy or not."""
    import http.client

    from adapters.healthcheck import read_healthz

    try:
        _, body = read_healthz(settings)
    except (OSError, http.client.HTTPException, ValueError):
        return False
    return isinstance(body, dict) and "ok" in body
