"""How the fake hands events and clicks to the app, and what became of each delivery.

Socket Mode: an envelope on the WebSocket, acknowledged by its ``envelope_id``. HTTP mode: a
POST to the app's request URL, signed like Slack signs (``v0=`` HMAC-SHA256 of
``v0:{timestamp}:{body}``), with ``X-Slack-Retry-Num`` on redeliveries; events as JSON, clicks
as a form with one ``payload`` field, slash commands as a form of their fields. A delivery can be forged (signed with another secret) or
stale (timestamped six minutes ago). Slack wants the acknowledgement within 3 seconds.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlencode

import aiohttp

from tests.fakes.slack.socket_mode import SocketMode

ACK_WINDOW = 3.0
WAIT = 5.0
Kind = Literal["events_api", "interactive", "slash_commands"]


@dataclass
class Delivery:
    kind: Kind
    payload: dict[str, Any]
    attempt: int = 0
    sent_at: float = 0.0
    acked_at: float | None = None
    status: int | None = None
    """HTTP mode: the app's answer (Socket Mode: 200 once acknowledged)."""
    answer: str = ""

    @property
    def acked_in(self) -> float | None:
        return None if self.acked_at is None else self.acked_at - self.sent_at

    @property
    def acked_in_time(self) -> bool:
        return self.acked_in is not None and self.acked_in <= ACK_WINDOW and self.status == 200

    @property
    def event_id(self) -> str | None:
        value = self.payload.get("event_id")
        return value if isinstance(value, str) else None


class Deliverer:
    def __init__(self, socket: SocketMode, signing_secret: str) -> None:
        self.socket = socket
        self.signing_secret = signing_secret
        self.mode: Literal["socket", "http"] = "socket"
        self.target: str | None = None
        """HTTP mode: the app's request URL."""
        self._session: aiohttp.ClientSession | None = None

    async def open(self) -> None:
        self._session = aiohttp.ClientSession()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def deliver(
        self, delivery: Delivery, *, reason: str = "", forge: bool = False, stale: bool = False
    ) -> Delivery:
        delivery.sent_at = time.monotonic()
        if self.mode == "socket":
            ack = await self.socket.send(delivery.kind, delivery.payload, delivery.attempt, reason)
            try:
                delivery.acked_at = await asyncio.wait_for(asyncio.shield(ack), WAIT)
                delivery.status = 200
            except TimeoutError:
                pass
            return delivery
        await self._post(delivery, reason, forge, stale)
        return delivery

    async def _post(self, delivery: Delivery, reason: str, forge: bool, stale: bool) -> None:
        assert self._session is not None and self.target is not None, "no request URL"
        if delivery.kind == "events_api":
            body = json.dumps(delivery.payload).encode()
            content_type = "application/json"
        elif delivery.kind == "slash_commands":  # the command's fields, as a form
            body = urlencode(delivery.payload).encode()
            content_type = "application/x-www-form-urlencoded"
        else:
            body = urlencode({"payload": json.dumps(delivery.payload)}).encode()
            content_type = "application/x-www-form-urlencoded"
        timestamp = str(int(time.time()) - (360 if stale else 0))
        secret = "not-the-signing-secret" if forge else self.signing_secret
        headers = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": sign(secret, timestamp, body),
        }
        if delivery.attempt:
            headers["X-Slack-Retry-Num"] = str(delivery.attempt)
            headers["X-Slack-Retry-Reason"] = reason or "http_timeout"
        timeout = aiohttp.ClientTimeout(total=WAIT)
        async with self._session.post(
            self.target, data=body, headers=headers, timeout=timeout
        ) as response:
            delivery.answer = await response.text()
            delivery.status = response.status
        delivery.acked_at = time.monotonic()


def sign(secret: str, timestamp: str, body: bytes) -> str:
    base = f"v0:{timestamp}:".encode() + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
