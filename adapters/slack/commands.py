"""``/threadline …`` on Slack: the command's payload → the thread it is about → the shared
command (:mod:`bot.api.commands`) → an answer only the person sees.

Slack runs slash commands in channels, never inside threads, and its payload names no thread.
So the command names one: a link to any message of the thread (Slack's "Copy link") anywhere
in the text, or, without a link, the bot's most recently active thread in this channel. The
answer says which thread it was about. ``reset`` forgets a conversation, so it needs the link.

The listener acknowledges at once (Slack wants it within 3 s); the work happens in an owned
task and its answer goes to the command's ``response_url`` (ephemeral), or, when that fails,
to ``chat.postEphemeral``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
from slack_sdk.errors import SlackClientError
from slack_sdk.webhook.async_client import AsyncWebhookClient

from adapters.slack.blocks import message_payload
from adapters.slack.parse import thread_key
from adapters.slack.render import render
from bot.api.commands import Command, NotACommand, parse
from bot.api.inbound import ThreadKey

log = logging.getLogger(__name__)

RESPOND_TIMEOUT_S = 10
_LINK = re.compile(
    r"<?(https?://[^\s<>|]+/archives/([A-Z0-9]+)/p(\d{10})(\d{6})[^\s<>|]*)(?:\|[^>]*)?>?"
)
_TS = re.compile(r"^\d{10}\.\d{6}$")
NO_THREAD = (
    "I have no conversation in this channel yet. Mention me in a message to start one, or add "
    "a link to a thread of mine (its message menu → Copy link) to the command."
)
OTHER_CHANNEL = "That link points to another channel: run the command there."
RESET_NEEDS_LINK = (
    "Which thread? `reset` forgets a conversation, so add the link to one of its messages "
    "(message menu → Copy link): `/threadline reset https://…`"
)


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """What the command's payload says (``user_id``, ``channel_id``, ``text``…)."""

    team: str
    channel: str
    user: str
    text: str
    response_url: str | None


@dataclass(frozen=True, slots=True)
class Target:
    """The command and the thread it is about, or why there is none."""

    command: Command | None
    key: ThreadKey | None
    note: str = ""
    """Said instead of running (no thread, bad text), or before the answer (which thread)."""


def read_payload(body: Any) -> SlashCommand | None:
    """The command in a ``slash_commands`` payload; None when it is not one."""
    if not isinstance(body, dict):
        return None
    fields = {name: body.get(name) for name in ("team_id", "channel_id", "user_id")}
    if not all(isinstance(v, str) and v for v in fields.values()):
        return None
    text, url = body.get("text"), body.get("response_url")
    return SlashCommand(
        str(fields["team_id"]),
        str(fields["channel_id"]),
        str(fields["user_id"]),
        text if isinstance(text, str) else "",
        url if isinstance(url, str) and url.startswith(("https://", "http://")) else None,
    )


def thread_link(text: str) -> tuple[str, tuple[str, str] | None]:
    """The text without its first message link, and the ``(channel, thread_ts)`` that link
    names (a reply's link carries its thread's ``thread_ts``)."""
    found = _LINK.search(text)
    if found is None:
        return text, None
    url, channel, seconds, micros = found.groups()
    thread_ts = parse_qs(urlsplit(url).query).get("thread_ts", [f"{seconds}.{micros}"])[0]
    if not _TS.match(thread_ts):
        thread_ts = f"{seconds}.{micros}"
    rest = (text[: found.start()] + " " + text[found.end() :]).strip()
    return rest, (channel, thread_ts)


def target(command: SlashCommand, latest: ThreadKey | None) -> Target:
    """Which command and which thread (``latest``: the bot's last active thread here)."""
    text, linked = thread_link(command.text)
    try:
        parsed = parse(text)
    except NotACommand as exc:
        return Target(None, None, str(exc))
    if linked is not None:
        channel, thread_ts = linked
        if channel != command.channel:
            return Target(None, None, OTHER_CHANNEL)
        return Target(parsed, thread_key(command.team, channel, thread_ts))
    if parsed == "reset":
        return Target(None, None, RESET_NEEDS_LINK)
    if latest is None:
        return Target(None, None, NO_THREAD)
    return Target(parsed, latest, f"_About the latest active thread here, from {_when(latest)}:_\n")


def _when(key: ThreadKey) -> str:
    """When the thread ``key`` began, for people (UTC)."""
    started = float(key.rsplit(":", 1)[1])
    return datetime.fromtimestamp(started, UTC).strftime("%Y-%m-%d %H:%M UTC")


async def respond(session: aiohttp.ClientSession, url: str, note: str) -> bool:
    """Post ``note`` to the command's ``response_url``, shown to the person alone; False when
    Slack refused it (used five times, expired) or could not be reached."""
    client = AsyncWebhookClient(url, timeout=RESPOND_TIMEOUT_S, session=session)
    payload = message_payload(render(note))
    try:
        response = await client.send(
            text=payload["text"],
            blocks=payload["blocks"],
            response_type="ephemeral",
            replace_original=False,
        )
    except (SlackClientError, aiohttp.ClientError, TimeoutError) as exc:
        log.warning(
            "could not answer a /threadline command through its response_url: %s",
            type(exc).__name__,
        )
        return False
    if response.status_code != 200:
        log.warning(
            "Slack refused the answer to a /threadline command: %s %s",
            response.status_code,
            response.body[:100],
        )
        return False
    return True
