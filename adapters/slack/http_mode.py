"""HTTP mode: Slack posts events and clicks to ``POST /slack/events`` on the shared server.

The signature is checked here, before Bolt parses anything: ``v0=`` + HMAC-SHA256 of
``v0:{timestamp}:{body}`` with the signing secret, compared in constant time, and refused when
the timestamp is more than five minutes off. A refused request gets 401 and is neither parsed
nor logged (Bolt's own check logs the body, so it is turned off). A signed payload that cannot
be read is acknowledged with 200 and dropped, since a redelivery would not read better. Redeliveries
(``X-Slack-Retry-Num``) go through like first deliveries: the core answers each message once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.signature import SignatureVerifier

log = logging.getLogger(__name__)

Dispatch = Callable[[AsyncBoltRequest], Awaitable[BoltResponse]]
MAX_BODY = 1024 * 1024


class EventsEndpoint:
    def __init__(self, signing_secret: str) -> None:
        self._verifier = SignatureVerifier(signing_secret)
        self.dispatch: Dispatch | None = None
        """Bolt's dispatcher, set when the adapter has started."""

    def verified(self, body: bytes, timestamp: str | None, signature: str | None) -> bool:
        try:
            return self._verifier.is_valid(body, timestamp, signature)
        except (ValueError, TypeError):  # a timestamp that is not a number
            return False

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.content_length is not None and request.content_length > MAX_BODY:
            return _json(413, "request too large")
        body = await request.read()
        headers = request.headers
        if not self.verified(
            body, headers.get("X-Slack-Request-Timestamp"), headers.get("X-Slack-Signature")
        ):
            log.warning("refused a request to /slack/events: invalid or stale signature")
            return _json(401, "invalid signature")
        if self.dispatch is None:
            return _json(503, "starting")
        retry = headers.get("X-Slack-Retry-Num")
        if retry is not None:
            log.info("Slack redelivery #%s (%s)", retry, headers.get("X-Slack-Retry-Reason", "?"))
        try:
            bolt_request = AsyncBoltRequest(
                body=body.decode("utf-8"),
                query=request.query_string,
                headers={k.lower(): v for k, v in headers.items()},
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            # signed by Slack but unreadable: acknowledged (a redelivery would not read better)
            log.warning("ignored a signed request to /slack/events that could not be read")
            return web.Response(status=200)
        return await to_aiohttp_response(await self.dispatch(bolt_request))


def _json(status: int, error: str) -> web.Response:
    return web.json_response({"ok": False, "error": error}, status=status)
