"""Downloads that misbehave, for the fakes' file hosts (Slack's ``url_private``, Discord's CDN).

A :class:`Fault` makes a download slow (the body spread over ``seconds``), silent (headers, then
nothing until the fake stops or ``silent_s`` pass), long (``body_bytes`` served, whatever the
file declared: streamed in chunks, never held whole) or lie in its ``Content-Length``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web

CHUNK = 64 * 1024


@dataclass
class Fault:
    seconds: float = 0.0
    """The body is spread evenly over this long."""
    silent: bool = False
    """Headers, then nothing (the body never comes)."""
    silent_s: float = 120.0
    """How long a silent download stays open at most (the fake's bound)."""
    body_bytes: int | None = None
    """Serve this many bytes (the file's data repeated) instead of the file."""
    content_length: int | None = None
    """The ``Content-Length`` announced (a lie when it is not the body's length)."""
    sent: int = 0
    """Bytes of the body written so far (all its downloads)."""
    released: asyncio.Event = field(default_factory=asyncio.Event)
    """Set by the test, or by the fake when it stops: a silent download is cut off."""


async def serve(
    request: web.Request,
    data: bytes,
    content_type: str,
    fault: Fault,
    progress: Callable[[], None] = lambda: None,
) -> web.StreamResponse:
    """Answer ``request`` with ``data`` the way ``fault`` says (``progress`` is called after
    each chunk)."""
    response = web.StreamResponse(headers={"Content-Type": content_type})
    if fault.content_length is not None:
        response.content_length = fault.content_length
    await response.prepare(request)
    if fault.silent:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(fault.released.wait(), fault.silent_s)
        if request.transport is not None:  # the host gives up: the body never ends
            request.transport.abort()
        return response
    total = len(data) if fault.body_bytes is None else fault.body_bytes
    block = (data or b"\0") * (CHUNK // max(1, len(data)) + 1)
    chunks = max(1, -(-total // CHUNK))
    pause = fault.seconds / chunks
    sent = 0
    with contextlib.suppress(ConnectionError):
        while sent < total:
            piece = block[: min(CHUNK, total - sent)]
            await response.write(piece)
            sent += len(piece)
            fault.sent += len(piece)
            progress()
            if pause:
                await asyncio.sleep(pause)
        await response.write_eof()
    return response
