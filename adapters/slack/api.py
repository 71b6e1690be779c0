"""The Slack Web API calls the adapter makes, with Slack's failures turned into ours.

One :class:`AsyncWebClient` per process, on one aiohttp session, pointed at ``SLACK_API_URL``
when set; every request on that session is counted for ``/metrics`` by Web API method. Its retry handlers are given explicitly: only connection errors are retried (once);
a 429 is never retried inside the SDK but raised as :class:`SurfaceRateLimited` with Slack's
``Retry-After``, so the presenter's edit budget sees every rate limit and decides what waits.
Every call goes through :meth:`SlackApi.call`, which keeps each 429's ``Retry-After`` for the
whole process (:mod:`adapters.slack.pauses`): no stream calls a method while another stream's
429 on it has not run out.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import AsyncConnectionErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse
from yarl import URL

from adapters.metering import request_trace
from adapters.slack.pauses import Lanes, Pauses
from bot.api.kit import Clock, SystemClock
from bot.errors import EditRefused, MessageTooLong, SurfaceError, SurfaceRateLimited

log = logging.getLogger(__name__)

DEFAULT_RETRY_AFTER = 1.0
_API_METHOD = re.compile(r"^[a-z]+(\.[a-zA-Z]+)+$")
TIMEOUT_S = 30
TOO_LONG = frozenset({"msg_too_long", "msg_blocks_too_long"})
NOT_EDITABLE = frozenset(
    {"cant_update_message", "message_not_found", "edit_window_closed", "is_archived"}
)
"""``chat.update`` errors meaning this message can no longer be edited (post a new one)."""
STATUS_REFUSED = frozenset(
    {
        "not_allowed",
        "missing_scope",
        "not_allowed_token_type",
        "method_not_supported_for_channel_type",
        "invalid_thread_ts",
        "channel_not_found",
        "feature_not_enabled",
        "unknown_method",
    }
)
"""``assistant.threads.setStatus`` answers meaning it does not work in this channel."""
FEATURE_REFUSED = frozenset(
    {
        "missing_scope",
        "not_allowed",
        "not_allowed_token_type",
        "feature_not_enabled",
        "not_enabled",
        "unknown_method",
        "method_deprecated",
    }
)
"""Answers meaning the app cannot use a method at all (a scope or an app feature is missing):
the feature that uses it is turned off (:mod:`adapters.slack.optional`)."""
THREAD_REFUSED = frozenset(
    {
        "invalid_thread_ts",
        "thread_not_found",
        "message_not_found",
        "channel_not_found",
        "method_not_supported_for_channel_type",
    }
)
"""Answers meaning an assistant thread method does not apply to this thread (not an assistant
thread): nothing is done there, the feature stays on."""


AUTH_PROBLEMS = {
    "invalid_auth": "Slack does not recognise this token (invalid_auth): copy it again from the app's settings",
    "not_authed": "no token reached Slack (not_authed)",
    "account_inactive": "the token belongs to a deleted user or an uninstalled app (account_inactive): reinstall the app",
    "token_revoked": "the token was revoked (token_revoked): reinstall the app and copy the new token",
    "token_expired": "the token has expired (token_expired): turn off token rotation or refresh it",
    "not_allowed_token_type": "this kind of token is not accepted here (not_allowed_token_type)",
    "missing_scope": "the token lacks a scope this call needs (missing_scope)",
    "team_access_not_granted": "the app is not installed in this workspace (team_access_not_granted)",
    "ratelimited": "Slack is rate limiting this app right now (ratelimited): try again in a minute",
}


def auth_problem(code: str) -> str:
    """Plain words for a token Slack refused."""
    return AUTH_PROBLEMS.get(code, f"Slack refused the token ({code})")


def method_of(http_method: str, url: URL) -> str:
    """The Web API method a request calls (``chat.update``), for ``/metrics``."""
    name = url.path.rstrip("/").rpartition("/")[2]
    return name if _API_METHOD.match(name) else "(other)"


def http_session() -> aiohttp.ClientSession:
    """The adapter's one HTTP session: every Web API call on it is counted by method."""
    return aiohttp.ClientSession(trace_configs=[request_trace("slack", method_of)])


def build_client(
    token: str | None, base_url: str, session: aiohttp.ClientSession
) -> AsyncWebClient:
    return AsyncWebClient(
        token=token,
        base_url=base_url,
        session=session,
        timeout=TIMEOUT_S,
        retry_handlers=[AsyncConnectionErrorRetryHandler(max_retry_count=1)],
        logger=logging.getLogger("slack_sdk.web.async_client"),
    )


def error_code(exc: SlackApiError) -> str:
    data = exc.response.data if exc.response is not None else None
    code = data.get("error") if isinstance(data, dict) else None
    return code if isinstance(code, str) else f"http_{exc.response.status_code}"


def retry_after(exc: SlackApiError) -> float:
    raw = exc.response.headers.get("Retry-After") if exc.response is not None else None
    try:
        return max(0.0, float(raw)) if raw is not None else DEFAULT_RETRY_AFTER
    except ValueError:
        return DEFAULT_RETRY_AFTER


def translate(exc: SlackApiError, method: str, *, editing: bool = False) -> SurfaceError:
    """Our error for a failed call (the message names the method and Slack's error code)."""
    code = error_code(exc)
    if exc.response.status_code == 429 or code == "ratelimited":
        return SurfaceRateLimited(retry_after(exc), f"Slack {method} rate limited")
    if code in TOO_LONG:
        return MessageTooLong(f"Slack {method}: {code}")
    if editing and code in NOT_EDITABLE:
        return EditRefused(f"Slack {method}: {code}")
    return SurfaceError(f"Slack {method} failed: {code}")


async def guarded(
    method: str,
    call: Awaitable[AsyncSlackResponse],
    *,
    editing: bool = False,
    ok: frozenset[str] = frozenset(),
) -> AsyncSlackResponse | None:
    """Await one Web API call; Slack's errors come out as :class:`SurfaceError` subclasses.

    Error codes in ``ok`` mean the wanted state already holds: None is returned.
    """
    try:
        return await call
    except SlackApiError as exc:
        if error_code(exc) in ok:
            return None
        raise translate(exc, method, editing=editing) from None
    except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
        raise SurfaceError(f"Slack {method} failed: {type(exc).__name__}") from exc


@dataclass(frozen=True, slots=True)
class Identity:
    """Who the bot is, from ``auth.test``."""

    team_id: str
    team: str
    bot_user_id: str
    bot_id: str
    user: str
    url: str = ""
    """The workspace's address (``https://<domain>.slack.com/``), for links to messages."""


class SlackApi:
    """The calls a surface, a click or an intake makes; each raises :class:`SurfaceError`."""

    def __init__(self, client: AsyncWebClient, clock: Clock | None = None) -> None:
        self.client = client
        self.pauses = Pauses(clock or SystemClock())
        self.lanes = Lanes()

    async def call(
        self,
        method: str,
        channel: str | None,
        make: Callable[[], Awaitable[AsyncSlackResponse]],
        *,
        editing: bool = False,
        ok: frozenset[str] = frozenset(),
    ) -> AsyncSlackResponse | None:
        """:func:`guarded` for the call ``make`` makes, unless ``method`` is paused in
        ``channel``'s scope by an earlier 429 (then it is not sent); a 429 pauses it. The
        methods streams share wait for the call before them (:class:`Lanes`)."""
        async with self.lanes.turn(method, channel):
            self.pauses.check(method, channel)
            try:
                return await guarded(method, make(), editing=editing, ok=ok)
            except SurfaceRateLimited as exc:
                self.pauses.note(method, channel, exc.retry_after)
                raise

    async def attempt(
        self,
        method: str,
        channel: str | None,
        make: Callable[[], Awaitable[AsyncSlackResponse]],
        refusals: frozenset[str],
    ) -> str | None:
        """:meth:`call`, for a method Slack may refuse: None when done, or Slack's answer when it
        is one of ``refusals`` (nothing was done); other failures raise as for :meth:`call`."""
        refused: list[str] = []

        async def made() -> AsyncSlackResponse:
            try:
                return await make()
            except SlackApiError as exc:
                if error_code(exc) in refusals:
                    refused.append(error_code(exc))
                raise

        await self.call(method, channel, made, ok=refusals)
        return refused[0] if refused else None

    async def set_suggested_prompts(
        self, channel: str, thread_ts: str, title: str, prompts: list[dict[str, str]]
    ) -> str | None:
        """``assistant.threads.setSuggestedPrompts``; Slack's refusal, if it refused."""
        return await self.attempt(
            "assistant.threads.setSuggestedPrompts",
            channel,
            lambda: self.client.assistant_threads_setSuggestedPrompts(
                channel_id=channel, thread_ts=thread_ts, title=title, prompts=prompts
            ),
            FEATURE_REFUSED | THREAD_REFUSED,
        )

    async def set_title(self, channel: str, thread_ts: str, title: str) -> str | None:
        """``assistant.threads.setTitle``; Slack's refusal, if it refused."""
        return await self.attempt(
            "assistant.threads.setTitle",
            channel,
            lambda: self.client.assistant_threads_setTitle(
                channel_id=channel, thread_ts=thread_ts, title=title
            ),
            FEATURE_REFUSED | THREAD_REFUSED,
        )

    async def publish_home(self, user: str, view: dict[str, Any]) -> str | None:
        """``views.publish`` of ``user``'s Home tab; Slack's refusal, if it refused."""
        return await self.attempt(
            "views.publish",
            None,
            lambda: self.client.views_publish(user_id=user, view=view),
            FEATURE_REFUSED,
        )

    async def post(self, channel: str, thread_ts: str | None, payload: dict[str, Any]) -> str:
        """Post in a thread (``thread_ts``) or, with None, in the channel itself."""
        threading: dict[str, Any] = {"thread_ts": thread_ts} if thread_ts else {}
        response = await self.call(
            "chat.postMessage",
            channel,
            lambda: self.client.chat_postMessage(channel=channel, **threading, **payload),
        )
        ts = response.get("ts") if response is not None else None
        if not isinstance(ts, str):
            raise SurfaceError("Slack chat.postMessage answered without a message ts")
        return ts

    async def update(self, channel: str, ts: str, payload: dict[str, Any]) -> None:
        await self.call(
            "chat.update",
            channel,
            lambda: self.client.chat_update(channel=channel, ts=ts, **payload),
            editing=True,
        )

    async def start_stream(
        self,
        channel: str,
        thread_ts: str,
        chunks: list[dict[str, Any]],
        recipient: dict[str, str],
        *,
        refused: frozenset[str],
    ) -> str | None:
        """``chat.startStream`` in ``timeline`` mode; None when Slack answers one of ``refused``."""
        response = await self.call(
            "chat.startStream",
            channel,
            lambda: self.client.chat_startStream(
                channel=channel,
                thread_ts=thread_ts,
                chunks=chunks,
                task_display_mode="timeline",
                **recipient,
            ),
            ok=refused,
        )
        if response is None:
            return None
        ts = response.get("ts")
        if not isinstance(ts, str):
            raise SurfaceError("Slack chat.startStream answered without a message ts")
        return ts

    async def append_stream(self, channel: str, ts: str, chunks: list[dict[str, Any]]) -> None:
        await self.call(
            "chat.appendStream",
            channel,
            lambda: self.client.chat_appendStream(channel=channel, ts=ts, chunks=chunks),
        )

    async def stop_stream(
        self, channel: str, ts: str, chunks: list[dict[str, Any]] | None = None
    ) -> None:
        """``chat.stopStream``, with ``chunks`` as the stream's last words when given."""
        extra: dict[str, Any] = {"chunks": chunks} if chunks else {}
        await self.call(
            "chat.stopStream",
            channel,
            lambda: self.client.chat_stopStream(channel=channel, ts=ts, **extra),
        )

    async def drop_buttons(self, channel: str, thread_ts: str, ts: str) -> None:
        """Read the message (``conversations.replies``) and update it without its buttons (a
        button a run left behind, clicked; a restart mends from what it kept instead)."""
        response = await self.call(
            "conversations.replies",
            channel,
            lambda: self.client.conversations_replies(
                channel=channel, ts=thread_ts, latest=ts, oldest=ts, inclusive=True, limit=2
            ),
        )  # the first page begins with the thread's parent, whatever the window
        found = response.get("messages") if response is not None else None
        shown = next((m for m in found or () if isinstance(m, dict) and m.get("ts") == ts), None)
        if shown is None:
            return  # gone: nothing to press any more
        blocks = [
            b
            for b in shown.get("blocks") or ()
            if isinstance(b, dict) and b.get("type") != "actions"
        ]
        payload: dict[str, Any] = {"text": str(shown.get("text") or " ")}
        if blocks:
            payload["blocks"] = blocks
        await self.update(channel, ts, payload)

    async def delete(self, channel: str, ts: str) -> None:
        await self.call(
            "chat.delete",
            channel,
            lambda: self.client.chat_delete(channel=channel, ts=ts),
            ok=frozenset({"message_not_found"}),
        )

    async def pin(self, channel: str, ts: str) -> None:
        await self.call(
            "pins.add",
            channel,
            lambda: self.client.pins_add(channel=channel, timestamp=ts),
            ok=frozenset({"already_pinned"}),
        )

    async def unpin(self, channel: str, ts: str) -> None:
        await self.call(
            "pins.remove",
            channel,
            lambda: self.client.pins_remove(channel=channel, timestamp=ts),
            ok=frozenset({"no_pin", "message_not_found"}),
        )

    async def set_status(self, channel: str, thread_ts: str, status: str) -> bool:
        """Show ``status`` ("" clears it); False when Slack does not offer it in this channel."""
        response = await self.call(
            "assistant.threads.setStatus",
            channel,
            lambda: self.client.assistant_threads_setStatus(
                channel_id=channel, thread_ts=thread_ts, status=status
            ),
            ok=STATUS_REFUSED,
        )
        return response is not None

    async def ephemeral(
        self, channel: str, user: str, thread_ts: str | None, payload: dict[str, Any]
    ) -> None:
        await self.call(
            "chat.postEphemeral",
            channel,
            lambda: self.client.chat_postEphemeral(
                channel=channel, user=user, thread_ts=thread_ts, **payload
            ),
        )

    async def user(self, user_id: str) -> dict[str, Any]:
        response = await self.call("users.info", None, lambda: self.client.users_info(user=user_id))
        user = response.get("user") if response is not None else None
        return user if isinstance(user, dict) else {}

    async def channel_name(self, channel_id: str) -> str | None:
        """A channel's name (``conversations.info``); None for a direct message or no name."""
        response = await self.call(
            "conversations.info",
            channel_id,
            lambda: self.client.conversations_info(channel=channel_id),
        )
        channel = response.get("channel") if response is not None else None
        name = channel.get("name") if isinstance(channel, dict) else None
        return name if isinstance(name, str) and name else None

    async def group_members(self, group_id: str) -> frozenset[str]:
        """The user ids in a user group (``usergroups.users.list``)."""
        response = await self.call(
            "usergroups.users.list",
            None,
            lambda: self.client.usergroups_users_list(usergroup=group_id),
        )
        users = response.get("users") if response is not None else None
        return (
            frozenset(u for u in users if isinstance(u, str))
            if isinstance(users, list)
            else frozenset()
        )

    async def group_names(self) -> dict[str, str]:
        """Every user group's handle by id (``usergroups.list``, scope ``usergroups:read``)."""
        response = await self.call("usergroups.list", None, lambda: self.client.usergroups_list())
        groups = response.get("usergroups") if response is not None else None
        return {
            str(g["id"]): str(g.get("handle") or g.get("name") or g["id"])
            for g in groups or ()
            if isinstance(g, dict) and g.get("id")
        }

    async def open_dm(self, user_id: str) -> str:
        """The direct message channel with a user (``conversations.open``, scope ``im:write``)."""
        response = await self.call(
            "conversations.open", None, lambda: self.client.conversations_open(users=user_id)
        )
        channel = response.get("channel") if response is not None else None
        found = channel.get("id") if isinstance(channel, dict) else None
        if not isinstance(found, str):
            raise SurfaceError("Slack conversations.open answered without a channel")
        return found

    async def permalink(self, channel: str, ts: str) -> str | None:
        """A message's permalink (``chat.getPermalink``); None when Slack gives none."""
        response = await self.call(
            "chat.getPermalink",
            channel,
            lambda: self.client.chat_getPermalink(channel=channel, message_ts=ts),
        )
        link = response.get("permalink") if response is not None else None
        return link if isinstance(link, str) and link.startswith("https://") else None

    async def identity(self) -> Identity:
        """``auth.test``; raises :class:`SlackApiError` as is (the caller words it)."""
        response = await self.client.auth_test()
        return Identity(
            team_id=str(response["team_id"]),
            team=str(response.get("team") or response["team_id"]),
            bot_user_id=str(response["user_id"]),
            bot_id=str(response.get("bot_id") or ""),
            user=str(response.get("user") or response["user_id"]),
            url=str(response.get("url") or ""),
        )
