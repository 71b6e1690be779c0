"""Slash commands on the fake: the payload Slack sends for ``/threadline …`` and its
``response_url``.

A command is delivered like Slack delivers it: in Socket Mode an envelope of type
``slash_commands`` (acknowledged by its ``envelope_id``), in HTTP mode a signed form POST of
the command's fields. Its ``response_url`` (``POST /respond/{id}`` on the fake) takes JSON
``{"text", "blocks", "response_type"}``: ephemeral by default (kept as a note only the person
sees), ``in_channel`` posts in the channel. Like Slack's, it works 5 times within 30 minutes;
then it answers 404 ``used_url`` or ``expired_url``.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.slack.delivery import Delivery
from tests.fakes.slack.state import APP_ID, TEAM_ID, Channel, Ephemeral, Message, User, Workspace

USES = 5
LIFETIME_S = 30 * 60.0


@dataclass
class SlashCall:
    """One ``/threadline`` typed by a person, and what came back to its ``response_url``."""

    id: str
    user: str
    channel: str
    text: str
    issued_at: float = field(default_factory=time.monotonic)
    answers: list[dict[str, Any]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    """Why later uses were refused (``used_url``, ``expired_url``)."""
    delivery: Delivery | None = None
    """How the command reached the app (its acknowledgement time)."""

    @property
    def shown(self) -> list[str]:
        """The text of each answer, as Slack shows it."""
        return [Message(self.channel, "0", None, **_content(a)).shown for a in self.answers]


def payload(call: SlashCall, user: User, channel: Channel, response_url: str) -> dict[str, Any]:
    return {
        "token": "verification-token-unused",
        "team_id": TEAM_ID,
        "team_domain": "fake",
        "channel_id": channel.id,
        "channel_name": channel.name,
        "user_id": user.id,
        "user_name": user.name,
        "command": "/threadline",
        "text": call.text,
        "api_app_id": APP_ID,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": f"{int(time.time())}.{uuid.uuid4().hex[:12]}",
    }


class ResponseUrls:
    def __init__(self, workspace: Workspace, base_url: Callable[[], str]) -> None:
        self._workspace = workspace
        self._base_url = base_url
        self.calls: dict[str, SlashCall] = {}
        self.expired = False
        """Every response_url answers ``expired_url`` (an answer that came too late)."""

    def issue(self, user: str, channel: str, text: str) -> tuple[SlashCall, str]:
        call = SlashCall(uuid.uuid4().hex, user, channel, text)
        self.calls[call.id] = call
        return call, f"{self._base_url()}/respond/{call.id}"

    async def endpoint(self, request: web.Request) -> web.Response:
        call = self.calls.get(request.match_info["id"])
        if call is None:
            return web.Response(status=404, text="invalid_url")
        if self.expired or time.monotonic() - call.issued_at > LIFETIME_S:
            call.refused.append("expired_url")
            return web.Response(status=404, text="expired_url")
        if len(call.answers) >= USES:
            call.refused.append("used_url")
            return web.Response(status=404, text="used_url")
        try:
            body = json.loads(await request.read())
        except ValueError:
            return web.Response(status=400, text="invalid_payload")
        if not isinstance(body, dict) or not (body.get("text") or body.get("blocks")):
            return web.Response(status=400, text="no_text")
        call.answers.append(body)
        ws = self._workspace
        if body.get("response_type") == "in_channel":
            ws.post(
                call.channel,
                None,
                str(body.get("text") or ""),
                bot_id="BBOT",
                blocks=body.get("blocks"),
            )
        else:
            shown = call.shown[-1]
            ws.ephemerals.append(Ephemeral(call.channel, call.user, None, shown))
            ws.changed()
        return web.Response(status=200, text="ok")


def _content(answer: dict[str, Any]) -> dict[str, Any]:
    return {"text": str(answer.get("text") or ""), "blocks": answer.get("blocks")}
