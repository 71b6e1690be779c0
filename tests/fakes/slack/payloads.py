"""Events API and interactivity payloads, shaped like Slack's."""

from __future__ import annotations

import itertools
import time
import uuid
from typing import Any

from tests.fakes.slack.state import (
    APP_ID,
    BOT_ID,
    BOT_USER,
    TEAM_ID,
    Channel,
    Ephemeral,
    Message,
    User,
)

_EVENT_IDS = itertools.count(1)


def event_callback(event: dict[str, Any]) -> dict[str, Any]:
    return {
        "token": "verification-token-unused",
        "team_id": TEAM_ID,
        "context_team_id": TEAM_ID,
        "api_app_id": APP_ID,
        "event": event,
        "type": "event_callback",
        "event_id": f"Ev{next(_EVENT_IDS):08d}{uuid.uuid4().hex[:4].upper()}",
        "event_time": int(time.time()),
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": TEAM_ID,
                "user_id": BOT_USER,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
    }


def message_event(message: Message, channel: Channel) -> dict[str, Any]:
    event = message.as_event()
    event.update(
        {
            "channel": channel.id,
            "channel_type": channel.kind,
            "event_ts": message.ts,
            "team": TEAM_ID,
        }
    )
    if message.user is not None and message.bot_id is None:
        event["client_msg_id"] = str(uuid.uuid4())
    return event


def mention_event(message: Message) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "app_mention",
        "user": message.user,
        "text": message.text,
        "ts": message.ts,
        "channel": message.channel,
        "event_ts": message.ts,
        "team": TEAM_ID,
    }
    if message.thread_ts is not None:
        event["thread_ts"] = message.thread_ts
    if message.bot_id is not None:
        event["bot_id"] = message.bot_id
    return event


def changed_event(message: Message, previous: dict[str, Any], channel: Channel) -> dict[str, Any]:
    now = f"{time.time():.6f}"
    return {
        "type": "message",
        "subtype": "message_changed",
        "hidden": True,
        "channel": channel.id,
        "channel_type": channel.kind,
        "ts": now,
        "event_ts": now,
        "message": {**message.as_event(), "edited": {"user": message.user, "ts": now}},
        "previous_message": previous,
    }


def deleted_event(message: Message, channel: Channel) -> dict[str, Any]:
    now = f"{time.time():.6f}"
    return {
        "type": "message",
        "subtype": "message_deleted",
        "hidden": True,
        "channel": channel.id,
        "channel_type": channel.kind,
        "ts": now,
        "event_ts": now,
        "deleted_ts": message.ts,
        "previous_message": message.as_event(),
    }


def block_actions(
    user: User, channel: Channel, message: Message, button: dict[str, Any]
) -> dict[str, Any]:
    return {
        "type": "block_actions",
        "user": {"id": user.id, "username": user.name, "name": user.name, "team_id": TEAM_ID},
        "api_app_id": APP_ID,
        "token": "verification-token-unused",
        "container": {
            "type": "message",
            "message_ts": message.ts,
            "channel_id": channel.id,
            "is_ephemeral": False,
            **({"thread_ts": message.thread_ts} if message.thread_ts else {}),
        },
        "trigger_id": f"{int(time.time())}.{uuid.uuid4().hex[:12]}",
        "team": {"id": TEAM_ID, "domain": "fake"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel.id, "name": channel.name},
        "message": {**message.as_event(), "team": TEAM_ID},
        "state": {"values": {}},
        "response_url": "https://hooks.slack.invalid/actions/unused",
        "actions": [
            {
                "action_id": button["action_id"],
                "block_id": "threadline-actions",
                "text": button["text"],
                "value": button.get("value"),
                **({"style": button["style"]} if "style" in button else {}),
                "type": "button",
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }


def is_own(message: Message) -> bool:
    return message.bot_id == BOT_ID


def message_action(
    user: User, channel: Channel, message: Message, callback_id: str
) -> dict[str, Any]:
    """A message shortcut used on ``message`` (Slack's ``message_action`` payload)."""
    return {
        "type": "message_action",
        "token": "verification-token-unused",
        "action_ts": f"{time.time():.6f}",
        "team": {"id": TEAM_ID, "domain": "fake"},
        "user": {"id": user.id, "username": user.name, "name": user.name, "team_id": TEAM_ID},
        "channel": {"id": channel.id, "name": channel.name},
        "is_enterprise_install": False,
        "enterprise": None,
        "callback_id": callback_id,
        "trigger_id": f"{int(time.time())}.{uuid.uuid4().hex[:12]}",
        "response_url": "https://hooks.slack.invalid/app/unused",
        "message_ts": message.ts,
        "message": {**message.as_event(), "team": TEAM_ID},
    }


def ephemeral_actions(
    user: User, channel: Channel, note: Ephemeral, button: dict[str, Any]
) -> dict[str, Any]:
    """A click on a button of an ephemeral note (Slack sends no ``message`` for those)."""
    return {
        "type": "block_actions",
        "user": {"id": user.id, "username": user.name, "name": user.name, "team_id": TEAM_ID},
        "api_app_id": APP_ID,
        "token": "verification-token-unused",
        "container": {
            "type": "message",
            "message_ts": note.ts,
            "channel_id": channel.id,
            "is_ephemeral": True,
            **({"thread_ts": note.thread_ts} if note.thread_ts else {}),
        },
        "trigger_id": f"{int(time.time())}.{uuid.uuid4().hex[:12]}",
        "team": {"id": TEAM_ID, "domain": "fake"},
        "channel": {"id": channel.id, "name": channel.name},
        "state": {"values": {}},
        "response_url": "https://hooks.slack.invalid/actions/unused",
        "actions": [
            {
                "action_id": button["action_id"],
                "block_id": "threadline-actions",
                "text": button["text"],
                "value": button.get("value"),
                "type": "button",
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }


def feedback_action(
    user: User, channel: Channel, message: Message, element: dict[str, Any], positive: bool
) -> dict[str, Any]:
    """A click on one half of a ``feedback_buttons`` element: the same ``block_actions``
    payload as a button's, the action of type ``feedback_buttons`` with that half's value."""
    half = element["positive_button" if positive else "negative_button"]
    payload = block_actions(
        user,
        channel,
        message,
        {"action_id": element["action_id"], "text": half["text"], "value": half["value"]},
    )
    payload["actions"][0].update({"type": "feedback_buttons", "block_id": "threadline-feedback"})
    payload["actions"][0].pop("text")
    return payload


def view_submission(user: User, view: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """A modal sent: the view as opened, with what the person typed in ``state.values``."""
    return {
        "type": "view_submission",
        "team": {"id": TEAM_ID, "domain": "fake"},
        "user": {"id": user.id, "username": user.name, "name": user.name, "team_id": TEAM_ID},
        "api_app_id": APP_ID,
        "token": "verification-token-unused",
        "trigger_id": f"{int(time.time())}.{uuid.uuid4().hex[:12]}",
        "view": {
            **view,
            "id": "V" + uuid.uuid4().hex[:10].upper(),
            "team_id": TEAM_ID,
            "app_id": APP_ID,
            "state": {"values": values},
        },
        "response_urls": [],
        "is_enterprise_install": False,
    }


def assistant_thread_started(
    user: str, channel: str, thread_ts: str, context_channel: str | None
) -> dict[str, Any]:
    """``user`` opened the AI app's panel: a new assistant thread in their direct message."""
    context: dict[str, Any] = {"team_id": TEAM_ID, "enterprise_id": None}
    if context_channel is not None:
        context["channel_id"] = context_channel
    return {
        "type": "assistant_thread_started",
        "assistant_thread": {
            "user_id": user,
            "context": context,
            "channel_id": channel,
            "thread_ts": thread_ts,
        },
        "event_ts": f"{time.time():.6f}",
    }


def app_home_opened(user: str, channel: str, tab: str) -> dict[str, Any]:
    """``user`` opened the app's Home (``home``) or Messages (``messages``) tab."""
    return {
        "type": "app_home_opened",
        "user": user,
        "channel": channel,
        "tab": tab,
        "event_ts": f"{time.time():.6f}",
    }
