"""Discord's rate limits, seen from our side of discord.py.

The presenter's edit budget is what keeps a thread under Discord's per-channel message bucket;
this module gives it the platform's word:

- :class:`RateLimitWatch` is an aiohttp trace on discord.py's HTTP session. It reads
  ``X-RateLimit-Remaining``/``-Reset-After``/``-Bucket`` from every answer, so a surface call
  on a channel whose message bucket is known to be empty fails at once with the time left
  (instead of queueing inside discord.py). When a surface call gets a 429 that is not global,
  the trace raises :class:`RateLimitedNow` with the body's ``retry_after``; discord.py's
  own retry loop (sleep, then send the same, by then stale, text again) is skipped, and the
  surface raises ``SurfaceRateLimited`` so the presenter pauses the channel and sends the
  newest text later. Other calls (and global 429s, where discord.py's process-wide lock is
  the right tool) keep discord.py's handling.
- :class:`GlobalPacer` keeps our calls under the global limit (50 requests a second per bot)
  when many threads stream at once; the typing indicator only takes what is left over.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections import deque
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from types import SimpleNamespace

import aiohttp
from yarl import URL

from adapters.metering import request_trace
from bot.api.kit import Clock

log = logging.getLogger(__name__)

GLOBAL_PER_SECOND = 45
"""Discord allows 50 requests a second per bot; we leave room for discord.py's own calls."""
_MESSAGE_ROUTE = re.compile(r"/channels/(\d+)/messages(?:/(\d+))?$")
_VERSION = re.compile(r"^v\d+$")
_WORD = re.compile(r"^[a-z@_-]+$")
_TOKEN_AFTER = ("interactions", "webhooks")
"""``/interactions/{id}/{token}``, ``/webhooks/{id}/{token}``: the segment after the id is a secret."""
_surface_call: ContextVar[bool] = ContextVar("threadline_discord_surface_call", default=False)


class RateLimitedNow(Exception):
    """A 429 on a surface call, raised from inside discord.py's request (never caught there)."""

    def __init__(self, retry_after: float, scope: str) -> None:
        super().__init__(f"rate limited ({scope}); retry after {retry_after:.2f}s")
        self.retry_after = retry_after
        self.scope = scope


@dataclass(slots=True)
class _Bucket:
    name: str
    remaining: int
    resets_at: float


class RateLimitWatch:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._message_buckets: dict[int, _Bucket] = {}
        """Per channel: the last word on the bucket its messages are created and edited in."""
        self.seen_429 = 0

    def trace_config(self) -> aiohttp.TraceConfig:
        """The trace for discord.py's HTTP session: every request counted by route for
        ``/metrics`` (429s included), then read here."""
        trace = request_trace("discord", route_of)
        trace.on_request_end.append(self._on_request_end)
        return trace

    @contextlib.contextmanager
    def surface_call(self) -> Iterator[None]:
        """Calls made inside fail fast on a (non-global) 429 with :class:`RateLimitedNow`."""
        token = _surface_call.set(True)
        try:
            yield
        finally:
            _surface_call.reset(token)

    def wait_for_messages(self, channel_id: int) -> float:
        """Seconds until ``channel_id``'s message bucket has room again (0 when it has)."""
        bucket = self._message_buckets.get(channel_id)
        if bucket is None or bucket.remaining > 0:
            return 0.0
        return max(0.0, bucket.resets_at - self._clock.monotonic())

    async def _on_request_end(
        self,
        session: aiohttp.ClientSession,
        context: SimpleNamespace,
        params: aiohttp.TraceRequestEndParams,
    ) -> None:
        response = params.response
        self._note_headers(params.method, params.url.path, response)
        if response.status != 429:
            return
        self.seen_429 += 1
        scope = response.headers.get("X-RateLimit-Scope", "user")
        if not _surface_call.get() or response.headers.get("X-RateLimit-Global"):
            return
        try:
            body = await response.json(content_type=None)
            retry_after = float(body["retry_after"])
            is_global = bool(body.get("global"))
        except (ValueError, KeyError, TypeError, aiohttp.ClientError):
            retry_after, is_global = float(response.headers.get("Retry-After", "1")), False
        if not is_global:
            raise RateLimitedNow(retry_after, scope)

    def _note_headers(self, method: str, path: str, response: aiohttp.ClientResponse) -> None:
        match = _MESSAGE_ROUTE.search(path)
        headers = response.headers
        if match is None or (method, match.group(2) is None) not in (
            ("POST", True),
            ("PATCH", False),
        ):
            return
        if "X-RateLimit-Remaining" not in headers or response.status == 429:
            return
        try:
            remaining = int(headers["X-RateLimit-Remaining"])
            reset_after = float(headers.get("X-RateLimit-Reset-After", "0"))
        except ValueError:
            return
        name = headers.get("X-RateLimit-Bucket", "")
        self._message_buckets[int(match.group(1))] = _Bucket(
            name, remaining, self._clock.monotonic() + reset_after
        )


def route_of(method: str, url: URL) -> str:
    """The route a REST request takes, without ids or tokens (``PATCH /channels/{id}/messages/{id}``),
    for ``/metrics``; anything but the REST API (the gateway) is ``GET (other)``."""
    parts = url.path.strip("/").split("/")
    start = next((i + 1 for i, part in enumerate(parts) if _VERSION.match(part)), None)
    if start is None:
        return f"{method} (other)"
    route: list[str] = []
    for part in parts[start:]:
        if len(route) >= 2 and route[-1] == "{id}" and route[-2] in _TOKEN_AFTER:
            route.append("{token}")
        elif route and route[-1] == "reactions":
            route.append("{emoji}")
        elif part.isdigit():
            route.append("{id}")
        else:
            route.append(part if _WORD.match(part) else "{value}")
    return f"{method} /{'/'.join(route)}"


class GlobalPacer:
    """At most ``per_second`` of our calls in any one-second window, across every thread."""

    def __init__(self, clock: Clock, per_second: int = GLOBAL_PER_SECOND) -> None:
        self._clock = clock
        self._limit = per_second
        self._sent: deque[float] = deque()

    async def acquire(self) -> None:
        while not self.try_acquire():
            await self._clock.sleep(1.0 - (self._clock.monotonic() - self._sent[0]))

    def try_acquire(self, share: float = 1.0) -> bool:
        """Take a place now if fewer than ``share`` of the second's places are taken.

        Courtesy calls (the typing indicator) use a share below 1, so that under load they
        give way to the calls that show text.
        """
        now = self._clock.monotonic()
        while self._sent and now - self._sent[0] >= 1.0:
            self._sent.popleft()
        if len(self._sent) >= self._limit * share:
            return False
        self._sent.append(now)
        return True
