"""Socket Mode: slack_sdk's aiohttp client, acknowledging each envelope before Bolt sees it.

The WebSocket URL comes from ``apps.connections.open`` through the adapter's Web API client,
so ``SLACK_API_URL`` redirects it too. The first URL is asked for in :meth:`SocketLink.open`, so
a refused app token stops the start with a plain :class:`ConfigError`; after that the client
reconnects by itself (a ``disconnect`` message, a closed or silent link). Acknowledging first
means a payload Bolt cannot read is still acknowledged once, instead of being redelivered.
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

Dispatch = Callable[[AsyncBoltRequest], Awaitable[BoltResponse]]


class SocketLink:
    def __init__(
        self, app_token: str, web: AsyncWebClient, dispatch: Dispatch, *, ping_interval: float
    ) -> None:
        self._app_token = app_token
        self._web = web
        self._dispatch = dispatch
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

    async def _on_request(self, client: AsyncBaseSocketModeClient, request: SocketModeRequest) -> None:
        try:
            await client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))
        except (aiohttp.ClientError, ConnectionError):
            # the link is going away; unacknowledged, the envelope comes again on the next link
            log.info("could not acknowledge a Socket Mode %s envelope; Slack will resend it", request.type)
            return
        try:
            await self._dispatch(
                AsyncBoltRequest(mode="socket_mode", body=request.payload, headers=build_headers(request))
            )
        except Exception:  # a payload Bolt cannot read: acknowledged, reported, dropped
            log.warning("could not handle a Socket Mode %s envelope", request.type, exc_info=True)

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        client.socket_mode_request_listeners.clear()  # what arrives now is resent to the next link
        await client.close()  # type: ignore[no-untyped-call]
        for future in (client.message_processor, client.current_session_monitor, client.message_receiver):
            if future is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await future
