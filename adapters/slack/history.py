"""A thread's earlier messages, read once when the bot is first mentioned in a thread that
existed before (``conversations.replies``, one page): the thread's first message and the most
recent ones before the mention, at most ``limit``, each with its author's display name. The
bot's own messages are left out; other apps' are named as such.

What was not read is a :class:`Gap` where it was: the messages between the first and the most
recent ones that the ``limit`` left out (counted), and, when the page did not reach the mention
(``has_more``: a long thread, or Slack's 15-message page for apps outside the Marketplace),
the rest before it (not counted: one page is all Slack allows such apps a minute)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from adapters.slack.api import Identity, SlackApi
from adapters.slack.parse import mentioned_users, plain_text
from adapters.slack.people import DisplayNames
from bot.api.inbound import Earlier, Gap
from bot.errors import SurfaceError

log = logging.getLogger(__name__)

PAGE = 200
"""Messages read in the one request (the thread's first ones, from its root)."""


async def earlier(
    api: SlackApi,
    identity: Identity,
    names: DisplayNames,
    channel: str,
    root_ts: str,
    before_ts: str,
    limit: int,
) -> tuple[Earlier | Gap, ...]:
    """The thread's messages before ``before_ts`` (the root first), at most ``limit``; none when
    Slack refuses (the answer goes on without them)."""
    if limit <= 0:
        return ()
    try:
        response = await api.call(
            "conversations.replies",
            channel,
            lambda: api.client.conversations_replies(
                channel=channel, ts=root_ts, latest=before_ts, inclusive=False, limit=PAGE
            ),
        )
    except SurfaceError as exc:
        log.warning("could not read the earlier messages of %s/%s: %s", channel, root_ts, exc)
        return ()
    found = response.get("messages") if response is not None else None
    said = [m for m in found or () if _shown(m, identity) and str(m.get("ts")) < before_ts]
    skipped = max(0, len(said) - limit)
    if skipped:  # the root, then the most recent
        said = [said[0], *said[len(said) - limit + 1 :]] if limit > 1 else said[:1]
    users = {str(m["user"]) for m in said if m.get("user") and not m.get("bot_id")}
    users |= {u for m in said for u in mentioned_users(str(m.get("text") or ""))}
    ordered = sorted(users)
    looked_up = await asyncio.gather(*(names.name(u) for u in ordered))
    known = dict(zip(ordered, looked_up, strict=True))
    read: list[Earlier | Gap] = [
        Earlier(_author(m, known), plain_text(str(m.get("text") or ""), known)) for m in said
    ]
    if skipped:
        read.insert(1, Gap(skipped))
    if response is not None and response.get("has_more"):
        read.append(Gap(None))
    return tuple(read)


def _shown(message: Any, identity: Identity) -> bool:
    """A message people wrote or another app posted (not this bot's, not a join or an edit)."""
    if not isinstance(message, dict) or not str(message.get("text") or "").strip():
        return False
    if message.get("user") == identity.bot_user_id or (
        identity.bot_id and message.get("bot_id") == identity.bot_id
    ):
        return False
    return message.get("subtype") in (None, "bot_message", "thread_broadcast", "file_share")


def _author(message: dict[str, Any], names: dict[str, str]) -> str:
    if message.get("bot_id"):
        profile = message.get("bot_profile")
        name = profile.get("name") if isinstance(profile, dict) else None
        return f"{name or message.get('username') or 'an app'} (an app)"
    return names.get(str(message.get("user")), str(message.get("user") or "someone"))
