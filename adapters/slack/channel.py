"""A Slack thread's channel, read for ``read_channel`` (``conversations.history``, one page,
scope ``channels:history``; Tier 3, and one request a minute for an app outside the
Marketplace): the most recent messages people and apps wrote, with their authors' display
names (the names already looked up are kept) and links built from the workspace's address and
each message's ts, without a ``chat.getPermalink`` per message."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from adapters.slack.api import Identity, SlackApi
from adapters.slack.parse import mentioned_users, plain_text
from adapters.slack.people import DisplayNames
from bot.api.channel import ChannelMessage, OtherChannel

SHOWN = (None, "bot_message", "thread_broadcast", "file_share")
"""Subtypes of what someone said (not joins, topics, edits)."""


@dataclass(frozen=True, slots=True)
class SlackChannelHistory:
    api: SlackApi
    identity: Identity
    names: DisplayNames
    channel: str

    async def recent(self, since: float | None, limit: int) -> Sequence[ChannelMessage]:
        response = await self.api.call(
            "conversations.history",
            self.channel,
            lambda: self.api.client.conversations_history(
                channel=self.channel, oldest=f"{since:.6f}" if since else "0", limit=limit
            ),
        )
        found = response.get("messages") if response is not None else None
        said = sorted((m for m in found or () if _shown(m)), key=lambda m: float(m["ts"]))[-limit:]
        users = {str(m["user"]) for m in said if m.get("user") and not m.get("bot_id")}
        users |= {u for m in said for u in mentioned_users(str(m.get("text") or ""))}
        ordered = sorted(users)
        looked_up = await asyncio.gather(*(self.names.name(u) for u in ordered))
        known = dict(zip(ordered, looked_up, strict=True))
        return [self._message(m, known) for m in said]

    def _message(self, message: dict[str, Any], names: dict[str, str]) -> ChannelMessage:
        ts = str(message["ts"])
        replies = message.get("reply_count")
        return ChannelMessage(
            author=_author(message, names),
            text=plain_text(str(message.get("text") or ""), names),
            at=float(ts),
            link=self.link(ts),
            replies=replies if isinstance(replies, int) and replies > 0 else 0,
        )

    def link(self, ts: str) -> str:
        """The message's permalink when the workspace's address is known, else its ts."""
        url = self.identity.url
        if not url.startswith("https://"):
            return f"ts {ts}"
        return f"{url.rstrip('/')}/archives/{self.channel}/p{ts.replace('.', '')}"


def _shown(message: Any) -> bool:
    if not isinstance(message, dict) or not str(message.get("text") or "").strip():
        return False
    try:
        float(message.get("ts") or "")
    except ValueError:
        return False
    return message.get("subtype") in SHOWN


def _author(message: dict[str, Any], names: dict[str, str]) -> str:
    if message.get("bot_id"):
        profile = message.get("bot_profile")
        name = profile.get("name") if isinstance(profile, dict) else None
        return f"{name or message.get('username') or 'an app'} (an app)"
    return names.get(str(message.get("user")), str(message.get("user") or "someone"))


MENTION = re.compile(r"^<#([CG][A-Z0-9]+)(?:\|[^>]*)?>$")
CHANNEL_ID = re.compile(r"^[CG][A-Z0-9]{6,}$")
PAGES = 10
"""Pages of ``conversations.list`` and ``conversations.members`` read at most (1,000 each)."""
PAGE = 1000


@dataclass(frozen=True, slots=True)
class SlackChannels:
    """Other channels of the workspace, for ``read_channel`` naming one (``bot.api.channel``):
    found by mention, id or name (``conversations.list``, scopes ``channels:read`` and
    ``groups:read``), read only when the bot is in it (``conversations.info``) and the person
    asking is among its members (``conversations.members``)."""

    api: SlackApi
    identity: Identity
    names: DisplayNames

    async def find(self, ref: str, asker: str) -> OtherChannel | str:
        user = asker.removeprefix("slack:")
        if user == asker:
            return "only Slack people can have a Slack channel read"
        channel = await self._id(ref)
        if channel is None:
            return f"there is no channel {ref} that Threadline can see"
        info = await self.api.call(
            "conversations.info",
            channel,
            lambda: self.api.client.conversations_info(channel=channel),
            ok=frozenset({"channel_not_found"}),
        )
        found = info.get("channel") if info is not None else None
        if not isinstance(found, dict):
            return f"there is no channel {ref} that Threadline can see"
        name = f"#{found.get('name') or channel}"
        if not found.get("is_member"):
            return f"Threadline is not in {name}: someone there has to add it first"
        if not await self._member(channel, user):
            return f"the person asking is not a member of {name}"
        history = SlackChannelHistory(self.api, self.identity, self.names, channel)
        return OtherChannel(f"slack:{self.identity.team_id}:{channel}", name, history)

    async def _id(self, ref: str) -> str | None:
        mention = MENTION.match(ref)
        if mention:
            return mention[1]
        name = ref.removeprefix("#").strip().lower()
        if CHANNEL_ID.match(name.upper()) and name.upper() == ref.removeprefix("#").strip():
            return name.upper()
        cursor = ""
        for _ in range(PAGES):
            page = await self.api.call(
                "conversations.list",
                None,
                lambda c=cursor: self.api.client.conversations_list(  # type: ignore[misc]
                    types="public_channel,private_channel",
                    exclude_archived=True,
                    limit=PAGE,
                    cursor=c or None,
                ),
            )
            for channel in (page.get("channels") if page is not None else None) or ():
                if isinstance(channel, dict) and str(channel.get("name") or "").lower() == name:
                    return str(channel["id"])
            cursor = _next(page)
            if not cursor:
                return None
        return None

    async def _member(self, channel: str, user: str) -> bool:
        cursor = ""
        for _ in range(PAGES):
            page = await self.api.call(
                "conversations.members",
                channel,
                lambda c=cursor: self.api.client.conversations_members(  # type: ignore[misc]
                    channel=channel, limit=PAGE, cursor=c or None
                ),
            )
            members = page.get("members") if page is not None else None
            if user in (members or ()):
                return True
            cursor = _next(page)
            if not cursor:
                return False
        return False


def _next(page: Any) -> str:
    meta = page.get("response_metadata") if page is not None else None
    cursor = meta.get("next_cursor") if isinstance(meta, dict) else None
    return cursor if isinstance(cursor, str) else ""
