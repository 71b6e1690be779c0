"""Slack payloads → what the adapter acts on: a person's message, a click, or a message
shortcut; and Slack's message markup → the plain text the model reads.

Which messages the bot answers:

- a message that mentions the bot, in a channel or a group DM: a session in the thread under it
  (or in the thread it was written in);
- any message in a direct message with the bot: each top-level message starts a thread under
  it, a reply in a thread continues that thread's session;
- a message without a mention in a thread: handed to the core as not addressed to the bot
  (``needs_session``); the core decides whether the thread is the bot's and whether it answers
  it or only keeps it (``thread_replies``, a quiet thread);
- a person's edit of their message (``message_changed``), handed to the core as an edit of
  that message (:mod:`bot.thread.edits` decides whether it counts), unless the text is as it
  was (a link unfurled);
- nothing else: not top-level messages without a mention, not the bot's own or other bots'
  messages or their edits, not deletions, joins or any other subtype.

The thread key is ``slack:{team}:{channel}:{thread_ts}``, and the delivery id is the message's
identity ``slack:{team}:{channel}:{ts}``: a redelivery (same ``event_id``) and the pair of
``message`` and ``app_mention`` events one message produces carry the same id, so the core
answers the message once. An edit's is ``slack:{team}:{channel}:{ts}:edited:{edited ts}``: each
edit once.

Slack writes ``<@U123>`` for a person, ``<#C123|general>`` for a channel, ``<!here>`` for a
broadcast, ``<https://x|label>`` for a link and escapes ``& < >``. The model gets ``@Ada``,
``#general``, ``@here``, ``label (https://x)`` and the plain characters.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, NotRequired, TypedDict, TypeGuard

from adapters.slack.blocks import clicked_action
from bot.api.inbound import Attachment, ThreadKey

ANSWERED_SUBTYPES = frozenset({None, "file_share", "thread_broadcast"})
"""Message subtypes that are a person writing; every other subtype is ignored."""
DM_TYPES = frozenset({"im"})
_LEFTOVER = re.compile(r"^[\s,:;]+")
"""What a removed leading mention leaves behind: ``@bot: do this`` → ``do this``."""


class SlackFile(TypedDict, total=False):
    id: str
    name: str
    url_private: str
    size: int
    mimetype: str


class MessageEvent(TypedDict):
    """A ``message`` or ``app_mention`` event (the fields the adapter reads)."""

    type: str
    channel: str
    ts: str
    user: NotRequired[str]
    text: NotRequired[str]
    subtype: NotRequired[str]
    bot_id: NotRequired[str]
    hidden: NotRequired[bool]
    thread_ts: NotRequired[str]
    channel_type: NotRequired[str]
    files: NotRequired[list[SlackFile]]


@dataclass(frozen=True, slots=True)
class PersonMessage:
    channel: str
    ts: str
    root_ts: str
    """The thread it belongs to: its own ts when it is top-level."""
    user: str
    text: str
    """The text with the bot's mention removed (still Slack markup)."""
    files: tuple[Attachment, ...]
    needs_session: bool
    """Not addressed to the bot: the core answers it only in a thread the bot is in (and there
    as the thread's settings say)."""
    direct: bool = False
    """Written in a direct message with the bot."""
    edited: str | None = None
    """An edit of the message ``ts`` (its ``edited.ts``), whose new text ``text`` is."""

    def thread_key(self, team: str) -> ThreadKey:
        return thread_key(team, self.channel, self.root_ts)

    def event_id(self, team: str) -> str:
        edited = "" if self.edited is None else f":edited:{self.edited}"
        return f"slack:{team}:{self.channel}:{self.ts}{edited}"


@dataclass(frozen=True, slots=True)
class Click:
    user: str
    channel: str
    root_ts: str
    action_id: str
    message_ts: str | None = None
    """The message whose button was clicked."""
    trigger_id: str | None = None
    """What opens a modal in answer to the click (for 3 s)."""


@dataclass(frozen=True, slots=True)
class ShortcutUse:
    """A message shortcut (``message_action``): who used which one on which thread's message."""

    user: str
    channel: str
    root_ts: str
    """The thread of the message it was used on (the message's own ts when top-level)."""
    callback_id: str


def thread_key(team: str, channel: str, thread_ts: str) -> ThreadKey:
    return ThreadKey(f"slack:{team}:{channel}:{thread_ts}")


def split_key(key: ThreadKey) -> tuple[str, str, str]:
    """``(team, channel, thread_ts)`` of a Slack thread key."""
    platform, team, channel, thread_ts = key.split(":", 3)
    if platform != "slack" or not (team and channel and thread_ts):
        raise ValueError(f"not a Slack thread key: {key}")
    return team, channel, thread_ts


def parse_message(event: Any, bot_user_id: str) -> PersonMessage | None:
    """The person's message in ``event``, or None when the bot should not act on it."""
    if not _is_person_message(event, bot_user_id):
        return None
    channel, ts, user = event["channel"], event["ts"], event["user"]
    raw = event.get("text")
    text = raw if isinstance(raw, str) else ""
    mention = re.compile(rf" ?<@{re.escape(bot_user_id)}(?:\|[^>]*)?>")
    mentioned = mention.search(text) is not None
    text = _LEFTOVER.sub("", mention.sub("", text)).strip()
    files = _files(event.get("files"))
    if not text and not files:
        return None
    thread_ts = event.get("thread_ts")
    in_thread = isinstance(thread_ts, str) and bool(thread_ts) and thread_ts != ts
    direct = event.get("channel_type") in DM_TYPES or channel.startswith("D")
    if not (mentioned or direct or in_thread):
        return None
    return PersonMessage(
        channel=channel,
        ts=ts,
        root_ts=thread_ts if in_thread else ts,
        user=user,
        text=text,
        files=files,
        needs_session=not (mentioned or direct),
        direct=direct,
    )


def parse_edit(event: Any, bot_user_id: str) -> PersonMessage | None:
    """A person's edit of their message in ``event`` (``message_changed``), or None: not an
    edit, the bot's own or another bot's, or the same text (an unfurled link, a file added)."""
    if not isinstance(event, dict) or event.get("subtype") != "message_changed":
        return None
    new, old = event.get("message"), event.get("previous_message")
    if not isinstance(new, dict) or not isinstance(old, dict) or new.get("text") == old.get("text"):
        return None
    edited = new.get("edited")
    edited_ts = edited.get("ts") if isinstance(edited, dict) else None
    if not _text(edited_ts):
        return None
    fields = {"type": "message", "channel": event.get("channel")}
    if "channel_type" in event:
        fields["channel_type"] = event["channel_type"]
    message = parse_message({**new, **fields}, bot_user_id)
    if message is None or posted_at(message.ts) is None:
        return None
    return replace(message, files=(), needs_session=True, edited=edited_ts)


def posted_at(ts: str) -> float | None:
    """When the message ``ts`` was posted (Slack's ``ts`` is its time), None if unreadable."""
    try:
        return float(ts)
    except ValueError:
        return None


def _is_person_message(event: Any, bot_user_id: str) -> bool:
    """Written by a person (not this bot, not another bot), not an edit or other subtype."""
    if not isinstance(event, dict) or event.get("type") not in {"message", "app_mention"}:
        return False
    if event.get("subtype") not in ANSWERED_SUBTYPES or event.get("hidden"):
        return False
    if event.get("bot_id") or event.get("bot_profile"):
        return False
    fields = (event.get("channel"), event.get("ts"), event.get("user"))
    if not all(isinstance(f, str) and f for f in fields):
        return False
    return bool(event["user"] != bot_user_id)


def _files(raw: Any) -> tuple[Attachment, ...]:
    if not isinstance(raw, list):
        return ()
    found: list[Attachment] = []
    for item in raw:
        if isinstance(item, dict) and isinstance(item.get("url_private"), str):
            size, mimetype = item.get("size"), item.get("mimetype")
            found.append(
                Attachment(
                    name=str(item.get("name") or item.get("id") or "file"),
                    url=item["url_private"],
                    size=size if isinstance(size, int) else None,
                    mimetype=mimetype if isinstance(mimetype, str) else None,
                )
            )
    return tuple(found)


def parse_click(body: Any) -> Click | None:
    """The button click in a ``block_actions`` payload, or None for anything else."""
    if not isinstance(body, dict) or body.get("type") != "block_actions":
        return None
    actions = body.get("actions")
    if not isinstance(actions, list) or not actions or not isinstance(actions[0], dict):
        return None
    container = _dict(body, "container")
    message = _dict(body, "message")
    user = _dict(body, "user").get("id")
    channel = _dict(body, "channel").get("id") or container.get("channel_id")
    root = message.get("thread_ts") or container.get("thread_ts") or container.get("message_ts")
    action_id = clicked_action(actions[0])
    if not (_text(user) and _text(channel) and _text(root) and action_id):
        return None
    clicked = message.get("ts") or container.get("message_ts")
    return Click(
        user=user,
        channel=channel,
        root_ts=root,
        action_id=action_id,
        message_ts=clicked if _text(clicked) else None,
        trigger_id=body.get("trigger_id") if _text(body.get("trigger_id")) else None,
    )


def parse_shortcut(body: Any) -> ShortcutUse | None:
    """The message shortcut in a ``message_action`` payload, or None for anything else."""
    if not isinstance(body, dict) or body.get("type") != "message_action":
        return None
    message = _dict(body, "message")
    user = _dict(body, "user").get("id")
    channel = _dict(body, "channel").get("id")
    root = message.get("thread_ts") or message.get("ts") or body.get("message_ts")
    callback = body.get("callback_id")
    if not (_text(user) and _text(channel) and _text(root) and _text(callback)):
        return None
    return ShortcutUse(user=user, channel=channel, root_ts=root, callback_id=callback)


def _dict(body: dict[str, Any], name: str) -> dict[str, Any]:
    value = body.get(name)
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and bool(value)


# --- markup → plain text ---

_USER = re.compile(r"<@([UW][A-Z0-9]+)(?:\|([^>]*))?>")
_CHANNEL = re.compile(r"<#([CGD][A-Z0-9]+)(?:\|([^>]*))?>")
_SPECIAL = re.compile(r"<!([a-z]+)(?:\^[^|>]*)?(?:\|([^>]*))?>")
_LINK = re.compile(r"<((?:https?|mailto|tel):[^|>]+)(?:\|([^>]*))?>")


def mentioned_users(text: str) -> set[str]:
    """The user ids mentioned in ``text``."""
    return {m.group(1) for m in _USER.finditer(text)}


def plain_text(text: str, names: Mapping[str, str]) -> str:
    """``text`` as a person reads it in Slack; ``names`` maps user ids to display names."""
    text = _USER.sub(lambda m: "@" + (names.get(m.group(1)) or m.group(2) or m.group(1)), text)
    text = _CHANNEL.sub(lambda m: "#" + (m.group(2) or m.group(1)), text)
    text = _SPECIAL.sub(lambda m: m.group(2) or "@" + m.group(1), text)
    text = _LINK.sub(_link, text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _link(match: re.Match[str]) -> str:
    url, label = match.group(1), match.group(2)
    shown = url.removeprefix("mailto:").removeprefix("tel:")
    if not label or label in (shown, url):
        return shown
    return f"{label} ({shown})"
