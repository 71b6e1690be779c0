"""👍 / 👎 the way Slack's AI apps show them, and the "what went wrong?" modal.

The two buttons are a ``feedback_buttons`` element in a ``context_actions`` block (slack_sdk's
Block Kit models lack both, so the JSON is built here, as Slack documents it); each button's
``value`` carries its action id, so a click comes back through :mod:`bot.api.actions` like any
other. A 👎 opens a modal (``views.open`` with the click's ``trigger_id``, which lasts 3 s: it
is opened before anything else); its ``view_submission`` carries the form's id and the thread
in ``private_metadata``, and its answer goes to the person alone in the thread.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from adapters.slack.api import SlackApi, guarded
from bot.api.surface import Button

log = logging.getLogger(__name__)

FEEDBACK_BLOCK_ID = "threadline-feedback"
INPUT_BLOCK = "why"
INPUT_ACTION = "why-text"
NOTE_CHARS = 500
TITLE = "What went wrong?"

Block = dict[str, Any]


def feedback_block(buttons: tuple[Button, Button]) -> Block:
    """``context_actions`` with one ``feedback_buttons`` element: 👍 first, 👎 second."""
    up, down = buttons
    return {
        "type": "context_actions",
        "block_id": FEEDBACK_BLOCK_ID,
        "elements": [
            {
                "type": "feedback_buttons",
                "action_id": "threadline-feedback",
                "positive_button": _half(up, "Good answer"),
                "negative_button": _half(down, "Bad answer"),
            }
        ],
    }


def _half(button: Button, label: str) -> Block:
    return {
        "text": {"type": "plain_text", "text": button.label},
        "accessibility_label": label,
        "value": button.action_id,
    }


def modal(form_id: str, channel: str, root_ts: str) -> dict[str, Any]:
    """The one-line "what went wrong?" modal; the form and its thread ride along."""
    return {
        "type": "modal",
        "callback_id": "threadline-why",
        "private_metadata": json.dumps({"form": form_id, "channel": channel, "root": root_ts}),
        "title": {"type": "plain_text", "text": TITLE},
        "submit": {"type": "plain_text", "text": "Send"},
        "close": {"type": "plain_text", "text": "Skip"},
        "blocks": [
            {
                "type": "input",
                "block_id": INPUT_BLOCK,
                "label": {"type": "plain_text", "text": "In one line"},
                "element": {
                    "type": "plain_text_input",
                    "action_id": INPUT_ACTION,
                    "max_length": NOTE_CHARS,
                },
            }
        ],
    }


async def open_modal(api: SlackApi, trigger_id: str, view: dict[str, Any]) -> None:
    await guarded("views.open", api.client.views_open(trigger_id=trigger_id, view=view))


@dataclass(frozen=True, slots=True)
class Submission:
    user: str
    form_id: str
    channel: str
    root_ts: str
    text: str


def read_submission(body: Any) -> Submission | None:
    """The "what went wrong?" modal sent (``view_submission``); None for anything else."""
    if not isinstance(body, dict) or body.get("type") != "view_submission":
        return None
    view = _dict(body, "view")
    user = _dict(body, "user").get("id")
    try:
        meta = json.loads(view.get("private_metadata") or "")
    except (ValueError, TypeError):
        return None
    text = _dict(_dict(_dict(_dict(view, "state"), "values"), INPUT_BLOCK), INPUT_ACTION).get(
        "value"
    )
    if not isinstance(meta, dict) or not isinstance(user, str) or not user:
        return None
    form, channel, root = meta.get("form"), meta.get("channel"), meta.get("root")
    if not (isinstance(form, str) and isinstance(channel, str) and isinstance(root, str)):
        return None
    return Submission(user, form, channel, root, text if isinstance(text, str) else "")


def _dict(found: dict[str, Any], name: str) -> dict[str, Any]:
    value = found.get(name)
    return value if isinstance(value, dict) else {}
