"""A Slack thread's channel, read for ``read_channel`` (``conversations.history``, one page,
scope ``channels:history``; Tier 3, and one request a minute for an app outside the
Marketplace): the most recent messages people and apps wrote, with their authors' display
names (the names already looked up are kept) and links built from the workspace's address and
each message's ts, without a ``chat.getPermalink`` per message."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from adapters.slack.api import Identity, SlackApi
from adapters.slack.parse import mentioned_users, plain_text
from adapters.slack.people import DisplayNames
from bot.api.channel import ChannelMessage

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
