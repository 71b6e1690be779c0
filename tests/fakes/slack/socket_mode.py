"""The fake's Socket Mode endpoint: ``GET /link/?ticket=…`` upgraded to a WebSocket.

``apps.connections.open`` hands out a single-use ticket URL. On connect the server says
``hello``; it then sends envelopes (``events_api``, ``interactive``) to the newest open
connection — or keeps them until one opens — and expects ``{"envelope_id": …}`` acks. It can ask
clients to reconnect (a ``disconnect`` message, as Slack does before closing) or drop every
connection at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web

from tests.fakes.slack.state import APP_ID


class SocketMode:
    def __init__(self, base_url: Callable[[], str], on_change: Callable[[], None]) -> None:
        self._base_url = base_url
        self._on_change = on_change
        self._tickets: set[str] = set()
        self.connections: list[web.WebSocketResponse] = []
        self.opened = 0
        """Connections ever accepted."""
        self._waiting: list[str] = []
        self._acks: dict[str, asyncio.Future[float]] = {}
        self.spread = False
        """Spread the envelopes over the open connections (several workers of one app) by
        channel: each new channel goes to the next connection in turn, and every envelope of a
        channel to the same one (a mention's ``message`` and ``app_mention`` events alike)."""
        self.by_thread = False
        """With ``spread``: spread by thread instead (each thread of a channel to the next
        connection in turn), as Slack hands events to any connection of the app."""
        self._channels: dict[str, int] = {}

    def new_url(self) -> str:
        ticket = uuid.uuid4().hex
        self._tickets.add(ticket)
        return (
            f"{self._base_url().replace('http://', 'ws://')}/link/?ticket={ticket}&app_id={APP_ID}"
        )

    async def endpoint(self, request: web.Request) -> web.WebSocketResponse:
        ticket = request.query.get("ticket", "")
        if ticket not in self._tickets:
            raise web.HTTPUnauthorized(text="invalid ticket")
        self._tickets.discard(ticket)
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self.opened += 1
        await ws.send_json(
            {
                "type": "hello",
                "num_connections": len(self.connections) + 1,
                "debug_info": {"host": "fake-slack", "approximate_connection_time": 18060},
                "connection_info": {"app_id": APP_ID},
            }
        )
        self.connections.append(ws)
        self._on_change()
        waiting, self._waiting = self._waiting, []
        for frame in waiting:
            await ws.send_str(frame)
        try:
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    self._ack(message.data)
        finally:
            if ws in self.connections:
                self.connections.remove(ws)
            self._on_change()
        return ws

    def _ack(self, data: str) -> None:
        with contextlib.suppress(ValueError, AttributeError):
            envelope_id = json.loads(data).get("envelope_id")
            future = self._acks.get(envelope_id)
            if future is not None and not future.done():
                future.set_result(time.monotonic())

    async def send(
        self, kind: str, payload: dict[str, Any], attempt: int, reason: str
    ) -> asyncio.Future[float]:
        """Send one envelope (or keep it for the next connection); the future is its ack time."""
        envelope_id = str(uuid.uuid4())
        frame = json.dumps(
            {
                "envelope_id": envelope_id,
                "type": kind,
                "payload": payload,
                "accepts_response_payload": kind != "events_api",
                "retry_attempt": attempt,
                "retry_reason": reason,
            }
        )
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._acks[envelope_id] = future
        open_ = [ws for ws in self.connections if not ws.closed]
        if open_:
            await open_[self._connection(payload) % len(open_) if self.spread else -1].send_str(
                frame
            )
        else:
            self._waiting.append(frame)
        return future

    def _connection(self, payload: dict[str, Any]) -> int:
        event = payload.get("event") or {}
        channel = payload.get("channel")
        channel = str(
            event.get("channel")
            or (channel.get("id") if isinstance(channel, dict) else None)
            or payload.get("channel_id")
            or ""
        )
        if self.by_thread:
            channel += f":{event.get('thread_ts') or event.get('ts') or ''}"
        return self._channels.setdefault(channel, len(self._channels))

    async def ask_to_reconnect(self) -> None:
        for ws in list(self.connections):
            await ws.send_json(
                {
                    "type": "disconnect",
                    "reason": "refresh_requested",
                    "debug_info": {"host": "fake-slack"},
                }
            )

    async def drop(self) -> None:
        """Close every connection (the clients should open new ones)."""
        for ws in list(self.connections):
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"fake slack drops the link")

    async def close(self) -> None:
        for ws in list(self.connections):
            await ws.close(code=WSCloseCode.GOING_AWAY, message=b"fake slack stopping")
        for future in self._acks.values():
            future.cancel()
