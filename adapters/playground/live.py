"""The open WebSockets of the playground's pages, each fed in order through its own queue."""

from __future__ import annotations

import asyncio
import contextlib

from aiohttp import WSCloseCode, web

from adapters.playground.state import Event

QUEUE_SIZE = 1000
DRAIN_WAIT = 1.0


class Connection:
    """One open WebSocket, fed in order through its own bounded queue."""

    def __init__(self, ws: web.WebSocketResponse, client_id: str, user_id: str) -> None:
        self.ws = ws
        self.client_id = client_id
        self.user_id = user_id
        self.queue: asyncio.Queue[Event] = asyncio.Queue(QUEUE_SIZE)

    def push(self, event: Event) -> None:
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:  # a page that fell behind fetches everything again
            while not self.queue.empty():
                self.queue.get_nowait()
                self.queue.task_done()
            self.queue.put_nowait({"type": "resync"})

    async def pump(self) -> None:
        with contextlib.suppress(ConnectionError):
            while True:
                await self.ws.send_json(await self.queue.get())
                self.queue.task_done()

    async def close(self) -> None:
        """Send what is queued (for a moment at most), then hang up."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.queue.join(), DRAIN_WAIT)
        await self.ws.close(code=WSCloseCode.GOING_AWAY, message=b"server stopping")


class Hub:
    """The open WebSockets."""

    def __init__(self) -> None:
        self.connections: set[Connection] = set()

    def publish(self, event: Event) -> None:
        for connection in list(self.connections):
            connection.push(event)

    def send_to(self, client_id: str, user_id: str, event: Event) -> None:
        for connection in list(self.connections):
            if client_id and (connection.client_id, connection.user_id) == (client_id, user_id):
                connection.push(event)

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in list(self.connections)))
