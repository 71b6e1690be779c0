"""Socket Mode: slack_sdk's aiohttp client, acknowledging each envelope once Bolt has taken it.

The WebSocket URL comes from ``apps.connections.open`` through the adapter's Web API client,
so ``SLACK_API_URL`` redirects it too. The first URL is asked for in :meth:`SocketLink.open`, so
a refused app token stops the start with a plain :class:`ConfigError`; after that the client
reconnects by itself (a ``disconnect`` message, a closed or silent link). An envelope is
acknowledged after Bolt's listener returned — a message is stored by then, so a crash right after
the acknowledgement loses nothing — or after ``ACK_WITHIN`` seconds at the latest (the listener
goes on), and also when Bolt cannot read the payload, so that it is not redelivered forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import aiohttp
from slack_bolt.adapter.socket_mode.internals import build_headers
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.api import auth_problem, error_code
from bot.errors import ConfigError

log = logging.getLogger(__name__)
ACK_WITHIN = 2.5
"""Seconds an envelope waits for Bolt before it is acknowledged anyway (Slack wants 3)."""

Dispatch = Callable[[AsyncBoltRequest], Awaitable[BoltResponse]]


class SocketLink:
    def __init__(
        self, app_token: str, web: AsyncWebClient, dispatch: Dispatch, *, ping_interval: float
    ) -> None:
        self._app_token = app_token
        self._web = web
        self._dispatch = dispatch
        self._handling: set[asyncio.Future[BoltResponse]] = set()
        self._ping_interval = ping_interval
        self._client: SocketModeClient | None = None

    async def open(self) -> None:
        client = SocketModeClient(
            app_token=self._app_token, web_client=self._web, ping_interval=self._ping_interval
        )
        self._client = client
        client.socket_mode_request_listeners.append(self._on_request)
        try:
            client.wss_uri = await client.issue_new_wss_url()
        except SlackApiError as exc:
            raise ConfigError("SLACK_APP_TOKEN", auth_problem(error_code(exc))) from None
        await client.connect()  # type: ignore[no-untyped-call]

    async def _on_request(
        self, client: AsyncBaseSocketModeClient, request: SocketModeRequest
    ) -> None:
        handled = asyncio.ensure_future(self._bolt(request))
        self._handling.add(handled)
        handled.add_done_callback(self._handled)
        await asyncio.wait({handled}, timeout=ACK_WITHIN)
        try:
            await client.send_socket_mode_response(
                SocketModeResponse(envelope_id=request.envelope_id)
            )
        except (aiohttp.ClientError, ConnectionError):
            # the link is going away; unacknowledged, the envelope comes again on the next link
            log.info(
                "could not acknowledge a Socket Mode %s envelope; Slack will resend it",
                request.type,
            )

    async def _bolt(self, request: SocketModeRequest) -> BoltResponse:
        headers = build_headers(request)
        return await self._dispatch(
            AsyncBoltRequest(mode="socket_mode", body=request.payload, headers=headers)
        )

    def _handled(self, task: asyncio.Future[BoltResponse]) -> None:
        self._handling.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            # a payload Bolt cannot read: acknowledged, reported, dropped
            log.warning("could not handle a Socket Mode envelope", exc_info=exc)

    async def connected(self) -> bool:
        client = self._client
        return client is not None and bool(await client.is_connected())

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        client.socket_mode_request_listeners.clear()  # what arrives now is resent to the next link
        await client.close()  # type: ignore[no-untyped-call]
        for handling in list(self._handling):
            handling.cancel()
        await asyncio.gather(*self._handling, return_exceptions=True)
        for future in (
            client.message_processor,
            client.current_session_monitor,
            client.message_receiver,
        ):
            if future is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await future
