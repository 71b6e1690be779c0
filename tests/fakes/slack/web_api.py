"""The fake's Web API: ``POST|GET /api/{method}``, answered the way Slack answers.

Arguments are read from the query string, a form or a JSON body; the token from
``Authorization: Bearer`` (or a ``token`` argument). Errors are HTTP 200 with
``{"ok": false, "error": ...}``; rate limits are HTTP 429 with ``Retry-After``. Every answer to
the bot token carries ``x-oauth-scopes``; a method whose scope was not granted answers
``missing_scope``. The bot's own posts, edits and deletions are echoed as events, like Slack does.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.slack import payloads
from tests.fakes.slack.files import SlackFiles
from tests.fakes.slack.limits import RateLimits
from tests.fakes.slack.state import (
    BOT_ID,
    BOT_NAME,
    BOT_USER,
    TEAM_ID,
    TEAM_NAME,
    Channel,
    Ephemeral,
    Message,
    Workspace,
)
from tests.fakes.slack.wire import SlackError, arguments, check_blocks, token_of

MARKDOWN_LIMIT = 12_000
TEXT_LIMIT = 40_000
TASK_STATES = frozenset({"pending", "in_progress", "complete", "error"})
SCOPES = {
    "chat.postMessage": "chat:write",
    "chat.update": "chat:write",
    "chat.delete": "chat:write",
    "chat.postEphemeral": "chat:write",
    "chat.startStream": "chat:write",
    "chat.appendStream": "chat:write",
    "chat.stopStream": "chat:write",
    "assistant.threads.setStatus": "chat:write",
    "assistant.threads.setSuggestedPrompts": "assistant:write",
    "assistant.threads.setTitle": "assistant:write",
    "pins.add": "pins:write",
    "pins.remove": "pins:write",
    "pins.list": "pins:read",
    "reactions.add": "reactions:write",
    "reactions.remove": "reactions:write",
    "users.info": "users:read",
    "usergroups.users.list": "usergroups:read",
    "conversations.info": "channels:read",
    "conversations.members": "channels:read",
    "conversations.list": "channels:read",
    "conversations.open": "im:write",
    "usergroups.list": "usergroups:read",
    "conversations.replies": "channels:history",
    "conversations.history": "channels:history",
    "files.getUploadURLExternal": "files:write",
    "files.completeUploadExternal": "files:write",
}


@dataclass
class Tokens:
    bot: str
    app: str
    scopes: set[str]


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    outcome: str
    at: float = field(default_factory=time.monotonic)
    """When it was answered (``time.monotonic``)."""


@dataclass
class WebApi:
    workspace: Workspace
    limits: RateLimits
    tokens: Tokens
    emit: Callable[[dict[str, Any]], None]
    socket_url: Callable[[], str]
    markdown_limit: int = MARKDOWN_LIMIT
    refuse_edits: set[str] = field(default_factory=set)
    """Message ts whose edits answer ``cant_update_message``."""
    refuse_ephemerals: int = 0
    """The next this many ``chat.postEphemeral`` calls answer ``user_not_in_channel``."""
    calls: list[Call] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    slow: dict[str, float] = field(default_factory=dict)
    """Seconds a method takes to answer (a slow Slack)."""
    files: SlackFiles | None = None
    """Shared and uploaded files (set by the server)."""
    replies_page_max: int = 1000
    """Most messages ``conversations.replies`` gives in one answer (15 for an app outside the
    Marketplace installed in another workspace)."""
    views: list[dict[str, Any]] = field(default_factory=list)
    """Modals opened (``views.open``), oldest first."""
    triggers_used: set[str] = field(default_factory=set)
    home_tab: bool = True
    """Whether the app's Home tab is enabled (else ``views.publish`` answers ``not_enabled``)."""
    stream_ttl: float = 300.0
    """Seconds (``time.monotonic``) after ``chat.startStream`` when a stream stops taking
    appends (``message_not_in_streaming_state``); field reports say about five minutes."""

    async def handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if method in self.slow:
            await asyncio.sleep(self.slow[method])
        try:
            args = await arguments(request)
        except ValueError:
            return self._answer(method, {}, {"ok": False, "error": "invalid_json"})
        token = token_of(request, args)
        self.counts[method] += 1
        try:
            kind = self._authenticate(method, token)
            body = self._limited(method, args, kind)
            if isinstance(body, web.Response):
                self.calls.append(Call(method, args, "ratelimited"))
                return body
        except SlackError as exc:
            return self._answer(method, args, {"ok": False, "error": exc.code, **exc.extra}, token)
        return self._answer(method, args, {"ok": True, **body}, token)

    def _answer(
        self, method: str, args: dict[str, Any], body: dict[str, Any], token: str | None = None
    ) -> web.Response:
        self.calls.append(Call(method, args, "ok" if body.get("ok") else str(body.get("error"))))
        headers = {}
        if token == self.tokens.bot:
            headers["x-oauth-scopes"] = ",".join(sorted(self.tokens.scopes))
        return web.json_response(body, headers=headers)

    def _authenticate(self, method: str, token: str | None) -> str:
        if not token:
            raise SlackError("not_authed")
        if token not in (self.tokens.bot, self.tokens.app):
            raise SlackError("invalid_auth")
        kind = "app" if token == self.tokens.app else "bot"
        if (method == "apps.connections.open") != (kind == "app"):
            raise SlackError("not_allowed_token_type")
        needed = SCOPES.get(method)
        if kind == "bot" and needed is not None and needed not in self.tokens.scopes:
            raise SlackError(
                "missing_scope", needed=needed, provided=",".join(sorted(self.tokens.scopes))
            )
        return kind

    def _limited(
        self, method: str, args: dict[str, Any], kind: str
    ) -> dict[str, Any] | web.Response:
        channel = args.get("channel") or args.get("channel_id")
        refusal = self.limits.check(method, TEAM_ID, channel if isinstance(channel, str) else None)
        if refusal is not None:
            return web.json_response(
                {"ok": False, "error": "ratelimited"},
                status=429,
                headers={"Retry-After": refusal.header},
            )
        handler = getattr(self, "m_" + method.replace(".", "_"), None)
        if handler is None:
            raise SlackError("unknown_method")
        result: dict[str, Any] = handler(args)
        return result

    # --- methods ------------------------------------------------------------------------------
    def m_auth_test(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": "https://fake.slack.invalid/",
            "team": TEAM_NAME,
            "user": BOT_NAME,
            "team_id": TEAM_ID,
            "user_id": BOT_USER,
            "bot_id": BOT_ID,
            "is_enterprise_install": False,
        }

    def m_apps_connections_open(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"url": self.socket_url()}

    def m_users_info(self, args: dict[str, Any]) -> dict[str, Any]:
        user = self.workspace.users.get(str(args.get("user")))
        if user is None:
            raise SlackError("user_not_found")
        return {"user": user.info()}

    def m_usergroups_users_list(self, args: dict[str, Any]) -> dict[str, Any]:
        members = self.workspace.usergroups.get(str(args.get("usergroup")))
        if members is None:
            raise SlackError("no_such_subteam")
        return {"users": sorted(members)}

    def m_conversations_replies(self, args: dict[str, Any]) -> dict[str, Any]:
        """A thread's messages, oldest first, between ``oldest`` and ``latest`` (inclusive when
        asked), at most ``limit`` — and, as Slack does, the first page always begins with the
        thread's parent, whatever the window (so ``limit=1`` gives the parent alone)."""
        channel = self._channel(args.get("channel"))
        root = args.get("ts")
        if not isinstance(root, str) or self.workspace.find(channel.id, root) is None:
            raise SlackError("thread_not_found")
        inclusive = str(args.get("inclusive", "")).lower() in ("1", "true")
        low, high = float(args.get("oldest") or 0), float(args.get("latest") or 1e12)
        thread = self.workspace.thread(channel.id, root)
        found = thread[:1] + [
            m
            for m in thread[1:]
            if ((low <= float(m.ts) <= high) if inclusive else (low < float(m.ts) < high))
        ]
        limit = min(int(args.get("limit") or 1000), self.replies_page_max)
        return {"messages": [m.as_event() for m in found[:limit]], "has_more": len(found) > limit}

    def m_conversations_history(self, args: dict[str, Any]) -> dict[str, Any]:
        """A channel's messages (thread roots with their ``reply_count``, and replies also sent
        to the channel), newest first, after ``oldest``, at most ``limit`` (at most
        ``replies_page_max``, as for ``conversations.replies``)."""
        channel = self._channel(args.get("channel"))
        low, high = float(args.get("oldest") or 0), float(args.get("latest") or 1e12)
        found = [
            m
            for (c, _), m in self.workspace.messages.items()
            if c == channel.id
            and not m.deleted
            and low < float(m.ts) < high
            and (m.thread_ts in (None, m.ts) or m.subtype == "thread_broadcast")
        ]
        found.sort(key=lambda m: m.ts, reverse=True)
        limit = min(int(args.get("limit") or 100), self.replies_page_max)
        messages = []
        for m in found[:limit]:
            event = m.as_event()
            if replies := len(self.workspace.thread(channel.id, m.ts)) - 1:
                event["reply_count"] = replies
            messages.append(event)
        return {"messages": messages, "has_more": len(found) > limit}

    def m_conversations_info(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self.workspace.channels.get(str(args.get("channel")))
        if channel is None:
            raise SlackError("channel_not_found")
        if channel.kind == "group" and BOT_USER not in channel.members:
            raise SlackError("channel_not_found")  # a private channel the bot is not in
        return {"channel": _channel_object(channel)}

    def m_conversations_list(self, args: dict[str, Any]) -> dict[str, Any]:
        """Public channels, and the private ones the bot is in, a page at a time."""
        kinds = {"public_channel": "channel", "private_channel": "group", "im": "im"}
        wanted = {
            kinds[t] for t in str(args.get("types") or "public_channel").split(",") if t in kinds
        }
        shown = [
            c
            for c in sorted(self.workspace.channels.values(), key=lambda c: c.id)
            if c.kind in wanted and (c.kind == "channel" or BOT_USER in c.members)
        ]
        page, cursor = _page(shown, args, 100)
        return {"channels": [_channel_object(c) for c in page], **cursor}

    def m_conversations_members(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self.workspace.channels.get(str(args.get("channel")))
        if channel is None or (channel.kind != "channel" and BOT_USER not in channel.members):
            raise SlackError("channel_not_found")
        page, cursor = _page(sorted(channel.members), args, 100)
        return {"members": page, **cursor}

    def m_conversations_open(self, args: dict[str, Any]) -> dict[str, Any]:
        """The direct message channel between the bot and one user (made on first use)."""
        user = self.workspace.users.get(str(args.get("users")))
        if user is None:
            raise SlackError("user_not_found")
        if user.is_bot:
            raise SlackError("cannot_dm_bot")
        found = next(
            (
                c
                for c in self.workspace.channels.values()
                if c.kind == "im" and c.members == {BOT_USER, user.id}
            ),
            None,
        )
        if found is None:
            found = self.workspace.add_channel(
                Channel(f"D{user.id}", user.name, "im", {BOT_USER, user.id})
            )
        return {"channel": {"id": found.id}}

    def m_chat_getPermalink(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        message = self._message(channel.id, args.get("message_ts"))
        link = f"https://fake.slack.invalid/archives/{channel.id}/p{message.ts.replace('.', '')}"
        if message.thread_ts and message.thread_ts != message.ts:
            link += f"?thread_ts={message.thread_ts}&cid={channel.id}"
        return {"channel": channel.id, "permalink": link}

    def m_usergroups_list(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "usergroups": [
                {"id": group, "handle": self.workspace.usergroup_handles.get(group, group.lower())}
                for group in sorted(self.workspace.usergroups)
            ]
        }

    def m_files_getUploadURLExternal(self, args: dict[str, Any]) -> dict[str, Any]:
        assert self.files is not None
        return self.files.get_upload_url(args)

    def m_files_completeUploadExternal(self, args: dict[str, Any]) -> dict[str, Any]:
        assert self.files is not None
        raw = args.get("channel_id")
        channel = self._channel(raw).id if raw else None
        thread_ts = args.get("thread_ts") or None
        if (
            channel is not None
            and thread_ts is not None
            and self.workspace.find(channel, thread_ts) is None
        ):
            raise SlackError("thread_not_found")
        return self.files.complete_upload(args, channel)

    def post_upload(self, channel: str, thread_ts: str | None, comment: str) -> str:
        """The bot's message that shows an uploaded file in a thread."""
        where = self.workspace.channels[channel]
        message = self.workspace.post(
            channel, BOT_USER, comment, bot_id=BOT_ID, thread_ts=thread_ts, subtype="file_share"
        )
        self.emit(payloads.message_event(message, where))
        return message.ts

    def may_download(self, token: str | None) -> bool:
        return token == self.tokens.bot and "files:read" in self.tokens.scopes

    def m_chat_postMessage(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        thread_ts = args.get("thread_ts") or None
        if thread_ts is not None and self.workspace.find(channel.id, thread_ts) is None:
            raise SlackError("thread_not_found")
        content = self._content(args)
        message = self.workspace.post(
            channel.id, BOT_USER, bot_id=BOT_ID, thread_ts=thread_ts, **content
        )
        self.emit(payloads.message_event(message, channel))
        return {"channel": channel.id, "ts": message.ts, "message": message.as_event()}

    def m_views_open(self, args: dict[str, Any]) -> dict[str, Any]:
        """A modal opened in answer to an interaction (its ``trigger_id``, once)."""
        trigger, view = args.get("trigger_id"), args.get("view")
        if isinstance(view, str):
            view = json.loads(view)
        if not isinstance(trigger, str) or not trigger:
            raise SlackError("invalid_arguments")
        if trigger in self.triggers_used:
            raise SlackError("expired_trigger_id")
        if not isinstance(view, dict) or view.get("type") != "modal" or not view.get("blocks"):
            raise SlackError("invalid_arguments")
        self.triggers_used.add(trigger)
        self.views.append(view)
        return {"view": {**view, "id": f"V{len(self.views):08d}"}}

    def m_chat_update(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        message = self._message(channel.id, args.get("ts"))
        if message.bot_id != BOT_ID or message.ts in self.refuse_edits:
            raise SlackError("cant_update_message")
        content = self._content(args)
        previous = message.as_event()
        message.streaming = False  # an update ends a stream (how an expired one is finished)
        message.text = content["text"]
        message.markdown_text = content["markdown_text"]
        if "blocks" in args:  # Slack keeps the old blocks when none are sent
            message.blocks = content["blocks"]
        message.record()
        self.workspace.changed()
        self.emit(payloads.changed_event(message, previous, channel))
        return {"channel": channel.id, "ts": message.ts, "text": message.text}

    def m_chat_startStream(self, args: dict[str, Any]) -> dict[str, Any]:
        """A thread reply that grows with appends; outside DMs it needs its recipient."""
        channel = self._channel(args.get("channel"))
        thread_ts = args.get("thread_ts")
        if not isinstance(thread_ts, str) or self.workspace.find(channel.id, thread_ts) is None:
            raise SlackError("invalid_thread_ts" if not thread_ts else "thread_not_found")
        if not channel.streaming_allowed:
            raise SlackError("method_not_supported_for_channel_type")
        recipient = args.get("recipient_user_id")
        if channel.kind != "im" and (not recipient or not args.get("recipient_team_id")):
            raise SlackError(
                "missing_recipient_user_id" if not recipient else "missing_recipient_team_id"
            )
        if recipient is not None and recipient not in self.workspace.users:
            raise SlackError("user_not_found")
        if args.get("task_display_mode") not in (None, "timeline", "plan"):
            raise SlackError("invalid_arguments")
        message = self.workspace.post(
            channel.id,
            BOT_USER,
            "",
            bot_id=BOT_ID,
            thread_ts=thread_ts,
            markdown_text="",
            streaming=True,
            stream_started=time.monotonic(),
            recipient=recipient,
        )
        self._stream_content(message, args)
        self.emit(payloads.message_event(message, channel))
        return {"channel": channel.id, "ts": message.ts}

    def m_chat_appendStream(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        message = self._streaming(channel.id, args.get("ts"))
        self._stream_content(message, args)
        return {"channel": channel.id, "ts": message.ts}

    def m_chat_stopStream(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        message = self._streaming(channel.id, args.get("ts"))
        self._stream_content(message, args)
        message.streaming = False
        self.workspace.changed()
        return {"channel": channel.id, "ts": message.ts, "message": message.as_event()}

    def _streaming(self, channel: str, ts: Any) -> Message:
        message = self._message(channel, ts)
        if message.bot_id != BOT_ID:
            raise SlackError("cant_update_message")
        if message.streaming and time.monotonic() - message.stream_started > self.stream_ttl:
            message.streaming = False  # expired: it keeps what it shows
        if not message.streaming:
            raise SlackError("message_not_in_streaming_state")
        return message

    def _stream_content(self, message: Message, args: dict[str, Any]) -> None:
        """Apply ``markdown_text`` and ``chunks`` (text, task cards, plan) to a streamed message."""
        chunks = args.get("chunks") or []
        if isinstance(chunks, str):
            chunks = json.loads(chunks)
        text = args.get("markdown_text")
        if text is not None and chunks:
            raise SlackError("markdown_text_conflict")
        pieces = [text] if isinstance(text, str) else []
        for chunk in chunks:
            kind = chunk.get("type") if isinstance(chunk, dict) else None
            if kind == "markdown_text":
                pieces.append(str(chunk.get("text", "")))
            elif kind == "task_update":
                if (
                    not chunk.get("id")
                    or not chunk.get("title")
                    or chunk.get("status") not in TASK_STATES
                ):
                    raise SlackError("invalid_chunks")
                message.tasks[str(chunk["id"])] = dict(chunk)
            elif kind == "plan_update":
                message.plan_title = str(chunk.get("title", ""))
            else:
                raise SlackError("invalid_chunks")
        added = "".join(pieces)
        if len(added) > self.markdown_limit:
            raise SlackError("msg_too_long")
        if len((message.markdown_text or "") + added) > TEXT_LIMIT:
            raise SlackError("msg_too_long")
        if added or chunks:
            message.markdown_text = (message.markdown_text or "") + added
            message.text = message.markdown_text  # what notifications and the API show
            message.record()
            self.workspace.changed()

    def m_chat_delete(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        message = self._message(channel.id, args.get("ts"))
        if message.bot_id != BOT_ID:
            raise SlackError("cant_delete_message")
        message.deleted = True
        message.deleted_at = time.monotonic()
        if message.ts in channel.pins:
            channel.pins.remove(message.ts)
        self.workspace.changed()
        self.emit(payloads.deleted_event(message, channel))
        return {"channel": channel.id, "ts": message.ts}

    def m_chat_postEphemeral(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        user = str(args.get("user"))
        if user not in self.workspace.users:
            raise SlackError("user_not_found")
        if self.refuse_ephemerals > 0:
            self.refuse_ephemerals -= 1
            raise SlackError("user_not_in_channel")
        content = self._content(args)
        shown = Message(channel.id, "0", None, **content).shown
        ts = self.workspace.next_ts()
        self.workspace.ephemerals.append(
            Ephemeral(channel.id, user, args.get("thread_ts"), shown, content.get("blocks"), ts)
        )
        self.workspace.changed()
        return {"message_ts": ts}

    def m_pins_add(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        message = self._message(channel.id, args.get("timestamp"))
        if message.ts in channel.pins:
            raise SlackError("already_pinned")
        channel.pins.append(message.ts)
        self.workspace.changed()
        return {}

    def m_pins_remove(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        if args.get("timestamp") not in channel.pins:
            raise SlackError("no_pin")
        channel.pins.remove(str(args["timestamp"]))
        self.workspace.changed()
        return {}

    def m_pins_list(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel"))
        items = [
            {
                "type": "message",
                "channel": channel.id,
                "message": self.workspace.messages[(channel.id, ts)].as_event(),
            }
            for ts in channel.pins
        ]
        return {"items": items}

    def m_reactions_add(self, args: dict[str, Any]) -> dict[str, Any]:
        message = self._message(self._channel(args.get("channel")).id, args.get("timestamp"))
        users = message.reactions.setdefault(str(args.get("name")), set())
        if BOT_USER in users:
            raise SlackError("already_reacted")
        users.add(BOT_USER)
        self.workspace.changed()
        return {}

    def m_reactions_remove(self, args: dict[str, Any]) -> dict[str, Any]:
        message = self._message(self._channel(args.get("channel")).id, args.get("timestamp"))
        users = message.reactions.get(str(args.get("name")), set())
        if BOT_USER not in users:
            raise SlackError("no_reaction")
        users.discard(BOT_USER)
        self.workspace.changed()
        return {}

    def m_assistant_threads_setStatus(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = self._channel(args.get("channel_id"))
        if not channel.status_allowed:
            raise SlackError("not_allowed")
        thread_ts = str(args.get("thread_ts"))
        self._message(channel.id, thread_ts)
        self.workspace.set_status(channel.id, thread_ts, str(args.get("status", "")))
        return {}

    def m_assistant_threads_setSuggestedPrompts(self, args: dict[str, Any]) -> dict[str, Any]:
        """Up to four prompts, each with a title and a message, on an assistant thread."""
        thread = self._assistant_thread(args)
        prompts = args.get("prompts")
        if isinstance(prompts, str):
            prompts = json.loads(prompts)
        if (
            not isinstance(prompts, list)
            or not 0 < len(prompts) <= 4
            or not all(
                isinstance(p, dict)
                and isinstance(p.get("title"), str)
                and p["title"]
                and isinstance(p.get("message"), str)
                and p["message"]
                for p in prompts
            )
        ):
            raise SlackError("invalid_arguments")
        thread.prompts = [{"title": p["title"], "message": p["message"]} for p in prompts]
        thread.prompts_title = args.get("title")
        self.workspace.changed()
        return {}

    def m_assistant_threads_setTitle(self, args: dict[str, Any]) -> dict[str, Any]:
        thread = self._assistant_thread(args)
        title = args.get("title")
        if not isinstance(title, str) or not title.strip():
            raise SlackError("invalid_arguments")
        thread.title = title
        self.workspace.changed()
        return {}

    def _assistant_thread(self, args: dict[str, Any]) -> Any:
        """The assistant thread named by ``channel_id`` and ``thread_ts``; any other thread
        answers ``invalid_thread_ts``."""
        channel = self._channel(args.get("channel_id"))
        found = self.workspace.assistant_threads.get((channel.id, str(args.get("thread_ts"))))
        if found is None:
            raise SlackError("invalid_thread_ts")
        return found

    def m_views_publish(self, args: dict[str, Any]) -> dict[str, Any]:
        """A person's Home tab (needs no scope; the tab must be enabled)."""
        user, view = args.get("user_id"), args.get("view")
        if isinstance(view, str):
            view = json.loads(view)
        if not self.home_tab:
            raise SlackError("not_enabled")
        if not isinstance(user, str) or user not in self.workspace.users:
            raise SlackError("user_not_found")
        blocks = view.get("blocks") if isinstance(view, dict) else None
        if view.get("type") != "home" or not isinstance(blocks, list) or not 0 < len(blocks) <= 100:
            raise SlackError("invalid_arguments")
        self.workspace.home_views.setdefault(user, []).append(view)
        self.workspace.changed()
        return {"view": {**view, "id": f"VH{len(self.workspace.home_views[user]):07d}"}}

    # --- checks -------------------------------------------------------------------------------
    def _channel(self, channel_id: Any) -> Any:
        channel = self.workspace.channels.get(str(channel_id))
        if channel is None:
            raise SlackError("channel_not_found")
        if channel.kind in {"channel", "group"} and BOT_USER not in channel.members:
            raise SlackError("not_in_channel")
        return channel

    def _message(self, channel: str, ts: Any) -> Message:
        message = self.workspace.find(channel, str(ts))
        if message is None:
            raise SlackError("message_not_found")
        return message

    def _content(self, args: dict[str, Any]) -> dict[str, Any]:
        text, markdown, blocks = args.get("text"), args.get("markdown_text"), args.get("blocks")
        if isinstance(blocks, str):
            blocks = json.loads(blocks)
        if markdown is not None and (text is not None or blocks is not None):
            raise SlackError("markdown_text_conflict")
        if text is None and markdown is None and not blocks:
            raise SlackError("no_text")
        check_blocks(blocks, self.markdown_limit)
        if markdown is not None and len(markdown) > self.markdown_limit:
            raise SlackError("msg_too_long")
        return {"text": (text or "")[:TEXT_LIMIT], "markdown_text": markdown, "blocks": blocks}


def _channel_object(channel: Channel) -> dict[str, Any]:
    return {
        "id": channel.id,
        "name": channel.name,
        f"is_{channel.kind}": True,
        "is_member": BOT_USER in channel.members,
    }


def _page(items: list[Any], args: dict[str, Any], default: int) -> tuple[list[Any], dict[str, Any]]:
    """One page of ``items`` from ``cursor`` (an offset), at most ``limit``; the next cursor."""
    start = int(args.get("cursor") or 0)
    limit = min(int(args.get("limit") or default), 1000)
    page = items[start : start + limit]
    more = start + limit < len(items)
    return page, {"response_metadata": {"next_cursor": str(start + limit) if more else ""}}
