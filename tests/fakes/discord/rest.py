"""The fake Discord's REST API (``/api/v10``): the routes discord.py 2.7 calls for a bot.

Every answer carries Discord's rate-limit headers; errors use Discord's body
``{"code", "message"}``; a 429 has ``{"message", "retry_after", "global"}``, ``Retry-After``
and ``Via`` (without ``Via`` discord.py takes a 429 for a Cloudflare ban). JSON answers have
exactly ``Content-Type: application/json``, as discord.py requires.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.discord import payloads
from tests.fakes.discord.cdn import Cdn
from tests.fakes.discord.limits import (
    CHANNELS,
    DELETES,
    MESSAGES,
    OTHER,
    PINS,
    THREADS,
    TYPING,
    WEBHOOKS,
    Bucket,
    RateLimits,
)
from tests.fakes.discord.model import ApiError
from tests.fakes.discord.world import World

INTERACTION_DEADLINE = 3.0
INTERACTION_TOKEN_LIFE = 15 * 60.0
EPHEMERAL = 1 << 6
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class Call:
    """One request the bot made, as the fake answered it."""

    method: str
    route: str
    channel_id: int | None
    body: Any
    status: int
    at: float


class _Refused(Exception):
    """Over a rate limit: answer with this 429."""

    def __init__(self, response: web.Response) -> None:
        super().__init__("rate limited")
        self.response = response


def reply(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    if status == 204:
        return web.Response(status=204, headers=headers)
    return web.Response(
        body=json.dumps(data).encode(),
        status=status,
        headers={**(headers or {}), "Content-Type": "application/json"},
    )


class Rest:
    def __init__(
        self, world: World, limits: RateLimits, token: str, gateway_url: Callable[[], str]
    ):
        self.world = world
        self.limits = limits
        self.token = token
        self.gateway_url = gateway_url
        self.calls: list[Call] = []
        self.cdn = Cdn(lambda: "", world.snowflake, changed=world.changed)

    def routes(self, app: web.Application) -> None:
        r = app.router
        p = "/api/v10"
        c = p + "/channels/{cid:\\d+}"
        for method, path, handler in [
            ("GET", p + "/users/@me", self.me),
            ("GET", p + "/users/{uid:\\d+}", self.get_user),
            ("POST", p + "/users/@me/channels", self.create_dm),
            ("GET", p + "/oauth2/applications/@me", self.app_info),
            ("GET", p + "/applications/@me", self.app_info),
            ("GET", p + "/gateway", self.gateway),
            ("GET", p + "/gateway/bot", self.gateway),
            ("GET", c, self.get_channel),
            ("PATCH", c, self.patch_channel),
            ("POST", c + "/typing", self.typing),
            ("GET", c + "/messages/pins", self.list_pins),
            ("PUT", c + "/messages/pins/{mid:\\d+}", self.pin),
            ("DELETE", c + "/messages/pins/{mid:\\d+}", self.unpin),
            ("PUT", c + "/pins/{mid:\\d+}", self.pin),
            ("DELETE", c + "/pins/{mid:\\d+}", self.unpin),
            ("GET", p + "/guilds/{gid:\\d+}/threads/active", self.active_threads),
            ("GET", p + "/guilds/{gid:\\d+}/members/{uid:\\d+}", self.get_member),
            ("POST", c + "/messages", self.create_message),
            ("GET", c + "/messages", self.list_messages),
            ("GET", c + "/messages/{mid:\\d+}", self.get_message),
            ("PATCH", c + "/messages/{mid:\\d+}", self.edit_message),
            ("DELETE", c + "/messages/{mid:\\d+}", self.delete_message),
            ("POST", c + "/messages/{mid:\\d+}/threads", self.start_thread),
            ("PUT", p + "/applications/{app:\\d+}/commands", self.put_commands),
            ("GET", p + "/applications/{app:\\d+}/commands", self.get_commands),
            ("POST", p + "/interactions/{iid:\\d+}/{itoken}/callback", self.callback),
            ("POST", p + "/webhooks/{app:\\d+}/{itoken}", self.followup),
            ("PATCH", p + "/webhooks/{app:\\d+}/{itoken}/messages/{mid}", self.edit_followup),
        ]:
            r.add_route(method, path, self._wrap(handler))

    # --- plumbing -----------------------------------------------------------------------------
    def _wrap(self, handler: Handler) -> Handler:
        async def wrapped(request: web.Request) -> web.StreamResponse:
            try:
                multipart = request.content_type.startswith("multipart/")
                body = await request.json() if request.can_read_body and not multipart else None
            except ValueError:
                return reply(
                    {"code": 50109, "message": "The request body contains invalid JSON."}, 400
                )
            cid = int(request.match_info["cid"]) if "cid" in request.match_info else None
            bot_route = "itoken" not in request.match_info
            if bot_route and request.headers.get("Authorization") != f"Bot {self.token}":
                response: web.StreamResponse = reply(
                    {"message": "401: Unauthorized", "code": 0}, 401
                )
            else:
                try:
                    response = await handler(request)
                except ApiError as exc:
                    response = reply(exc.body(), exc.status)
                except _Refused as exc:
                    response = exc.response
            route = f"{request.method} {request.match_info.route.resource.canonical}"  # type: ignore[union-attr]
            at = self.world.clock.monotonic()
            self.calls.append(Call(request.method, route, cid, body, response.status, at))
            self.world.changed()
            return response

        return wrapped

    def _limit(
        self, request: web.Request, bucket: Bucket, major: str, *, counts_globally: bool = True
    ) -> dict[str, str]:
        headers, refusal = self.limits.take(bucket, major, counts_globally=counts_globally)
        if refusal is not None:
            raise _Refused(reply(refusal.body(), 429, headers))
        return headers

    @staticmethod
    def _ids(request: web.Request) -> tuple[int, int]:
        return int(request.match_info["cid"]), int(request.match_info.get("mid", 0))

    # --- identity -----------------------------------------------------------------------------
    async def me(self, request: web.Request) -> web.Response:
        return reply(payloads.user(self.world.bot), headers=self._limit(request, OTHER, "me"))

    async def get_user(self, request: web.Request) -> web.Response:
        uid = int(request.match_info["uid"])
        headers = self._limit(request, OTHER, "users")
        return reply(payloads.user(self.world.user(uid)), headers=headers)

    async def create_dm(self, request: web.Request) -> web.Response:
        """The direct message channel with a user (the same one each time)."""
        headers = self._limit(request, OTHER, "dm")
        body = await request.json()
        user = self.world.user(int(body.get("recipient_id") or 0))
        if user.bot:
            raise ApiError(400, 50007, "Cannot send messages to this user")
        return reply(payloads.channel(self.world.dm_with(user), self.world), headers=headers)

    async def app_info(self, request: web.Request) -> web.Response:
        return reply(payloads.application(self.world), headers=self._limit(request, OTHER, "app"))

    async def gateway(self, request: web.Request) -> web.Response:
        limit = {"total": 1000, "remaining": 999, "reset_after": 14_400_000, "max_concurrency": 1}
        return reply({"url": self.gateway_url(), "shards": 1, "session_start_limit": limit})

    # --- channels -----------------------------------------------------------------------------
    async def get_channel(self, request: web.Request) -> web.Response:
        cid, _ = self._ids(request)
        headers = self._limit(request, OTHER, str(cid))
        return reply(payloads.channel(self.world.channel(cid), self.world), headers=headers)

    async def patch_channel(self, request: web.Request) -> web.Response:
        cid, _ = self._ids(request)
        headers = self._limit(request, CHANNELS, str(cid))
        body = await request.json()
        thread = self.world.channel(cid)
        if thread.locked:  # reopening a locked thread takes Manage Threads, which the bot lacks
            raise ApiError(403, 50013, "Missing Permissions")
        if "archived" in body:
            thread = self.world.set_archived(cid, bool(body["archived"]))
        return reply(payloads.channel(thread, self.world), headers=headers)

    async def typing(self, request: web.Request) -> web.Response:
        cid, _ = self._ids(request)
        headers = self._limit(request, TYPING, str(cid))
        self.world.channel(cid).typing += 1
        return reply(None, 204, headers)

    # --- messages -----------------------------------------------------------------------------
    async def create_message(self, request: web.Request) -> web.Response:
        cid, _ = self._ids(request)
        headers = self._limit(request, MESSAGES, str(cid))
        attachments: list[dict[str, Any]] = []
        if request.content_type.startswith("multipart/"):
            body, attachments = await self.cdn.read_multipart(request, cid)
        else:
            body = await request.json()
        message = self.world.create_message(
            cid,
            self.world.bot,
            body.get("content") or "",
            components=body.get("components"),
            flags=body.get("flags") or 0,
            allowed_mentions=body.get("allowed_mentions"),
            attachments=attachments,
        )
        return reply(payloads.message(message, self.world), headers=headers)

    async def list_messages(self, request: web.Request) -> web.Response:
        cid, _ = self._ids(request)
        headers = self._limit(request, OTHER, str(cid))
        query = request.query
        try:
            limit = int(query.get("limit", "50"))
            before = int(query["before"]) if "before" in query else None
            after = int(query["after"]) if "after" in query else None
        except ValueError:
            raise ApiError(400, 50035, "Invalid Form Body") from None
        found = self.world.history(cid, limit=limit, before=before, after=after)
        return reply([payloads.message(m, self.world) for m in found], headers=headers)

    async def get_message(self, request: web.Request) -> web.Response:
        cid, mid = self._ids(request)
        headers = self._limit(request, OTHER, str(cid))
        return reply(payloads.message(self.world.message(cid, mid), self.world), headers=headers)

    async def edit_message(self, request: web.Request) -> web.Response:
        cid, mid = self._ids(request)
        headers = self._limit(request, MESSAGES, str(cid))
        body = await request.json()
        message = self.world.edit_message(
            cid,
            mid,
            self.world.bot,
            content=body.get("content"),
            components=body.get("components"),
            allowed_mentions=body.get("allowed_mentions"),
        )
        return reply(payloads.message(message, self.world), headers=headers)

    async def delete_message(self, request: web.Request) -> web.Response:
        cid, mid = self._ids(request)
        headers = self._limit(request, DELETES, str(cid))
        self.world.delete_message(cid, mid)
        return reply(None, 204, headers)

    async def start_thread(self, request: web.Request) -> web.Response:
        cid, mid = self._ids(request)
        headers = self._limit(request, THREADS, str(cid))
        body = await request.json()
        thread = self.world.start_thread(cid, mid, str(body.get("name") or "thread"))
        return reply(payloads.channel(thread, self.world), 201, headers)

    async def active_threads(self, request: web.Request) -> web.Response:
        gid = int(request.match_info["gid"])
        headers = self._limit(request, OTHER, f"guild-{gid}")
        return reply(payloads.active_threads(gid, self.world), headers=headers)

    async def get_member(self, request: web.Request) -> web.Response:
        gid, uid = int(request.match_info["gid"]), int(request.match_info["uid"])
        headers = self._limit(request, OTHER, f"guild-{gid}")
        found = self.world.guild(gid).members.get(uid)
        if found is None:
            raise ApiError(404, 10007, "Unknown Member")
        return reply(payloads.member(found), headers=headers)

    # --- pins ---------------------------------------------------------------------------------
    async def list_pins(self, request: web.Request) -> web.Response:
        cid, _ = self._ids(request)
        headers = self._limit(request, OTHER, str(cid))
        limit = int(request.query.get("limit", "50"))
        before = request.query.get("before")
        pins = sorted(self.world.channel(cid).pins, key=lambda p: p[1], reverse=True)
        if before is not None:
            pins = [p for p in pins if payloads.iso(p[1]) < before]
        items = [
            {
                "pinned_at": payloads.iso(at),
                "message": payloads.message(self.world.messages[mid], self.world),
            }
            for mid, at in pins[:limit]
        ]
        return reply({"items": items, "has_more": len(pins) > limit}, headers=headers)

    async def pin(self, request: web.Request) -> web.Response:
        cid, mid = self._ids(request)
        headers = self._limit(request, PINS, str(cid))
        self.world.pin(cid, mid)
        return reply(None, 204, headers)

    async def unpin(self, request: web.Request) -> web.Response:
        cid, mid = self._ids(request)
        headers = self._limit(request, PINS, str(cid))
        self.world.unpin(cid, mid)
        return reply(None, 204, headers)

    # --- application commands -----------------------------------------------------------------
    async def put_commands(self, request: web.Request) -> web.Response:
        headers = self._limit(request, OTHER, "commands")
        body = await request.json()
        self.world.commands = [
            {
                "description": "",  # message commands have none; Discord answers with ""
                **c,
                "id": str(self.world.snowflake()),
                "application_id": str(self.world.app_id),
                "version": str(self.world.snowflake()),
                "default_member_permissions": None,
            }
            for c in body
        ]
        self.world.command_syncs += 1
        return reply(self.world.commands, headers=headers)

    async def get_commands(self, request: web.Request) -> web.Response:
        return reply(self.world.commands, headers=self._limit(request, OTHER, "commands"))

    # --- interactions -------------------------------------------------------------------------
    async def callback(self, request: web.Request) -> web.Response:
        interaction = self.world.interactions.get(request.match_info["itoken"])
        headers = self._limit(request, OTHER, request.match_info["iid"], counts_globally=False)
        age = self.world.clock.monotonic() - (interaction.created_at if interaction else 0.0)
        if (
            interaction is None
            or str(interaction.id) != request.match_info["iid"]
            or age > INTERACTION_DEADLINE
        ):
            raise ApiError(404, 10062, "Unknown interaction")
        if interaction.callbacks:
            raise ApiError(400, 40060, "Interaction has already been acknowledged.")
        body = await request.json()
        interaction.callbacks.append(body)
        flags = (body.get("data") or {}).get("flags") or 0
        result = {
            "interaction": {
                "id": str(interaction.id),
                "type": interaction.type,
                "response_message_loading": body.get("type") == 5,
                "response_message_ephemeral": bool(flags & EPHEMERAL),
            }
        }
        if body.get("type") == 4:
            interaction.followups.append(body.get("data") or {})
        return reply(result, headers=headers)

    def _interaction(self, request: web.Request) -> Any:
        interaction = self.world.interactions.get(request.match_info["itoken"])
        age = self.world.clock.monotonic() - (interaction.created_at if interaction else 0.0)
        if interaction is None or not interaction.callbacks or age > INTERACTION_TOKEN_LIFE:
            raise ApiError(404, 10015, "Unknown Webhook")
        return interaction

    async def followup(self, request: web.Request) -> web.Response:
        headers = self._limit(request, WEBHOOKS, request.match_info["itoken"])
        interaction = self._interaction(request)
        body = await request.json()
        interaction.followups.append(body)
        note = self._webhook_message(interaction, body)
        interaction.notes.append(note)
        return reply(note, headers=headers)

    async def edit_followup(self, request: web.Request) -> web.Response:
        headers = self._limit(request, WEBHOOKS, request.match_info["itoken"])
        interaction = self._interaction(request)
        body = await request.json()
        interaction.followups.append(body)
        return reply(self._webhook_message(interaction, body), headers=headers)

    def _webhook_message(self, interaction: Any, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": str(self.world.snowflake()),
            "channel_id": str(interaction.channel_id),
            "author": payloads.user(self.world.bot),
            "content": body.get("content") or "",
            "timestamp": payloads.iso(self.world.clock.now()),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "type": 0,
            "flags": body.get("flags") or 0,
            "components": body.get("components") or [],
            "webhook_id": str(self.world.app_id),
            "application_id": str(self.world.app_id),
        }
