"""Block Kit for one message: its rendered Markdown in a ``markdown`` block, buttons below.

Every post and edit sends the whole ``blocks`` array (an edit without ``blocks`` would keep the
old ones, buttons included) and a short ``text`` that Slack uses for notifications only.
A button carries the opaque action id in its ``value`` (up to 2,000 characters) and, when it
fits, as its ``action_id`` too: a click needs nothing kept in memory, so buttons survive restarts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from adapters.slack.feedback import feedback_block
from bot.api.actions import is_feedback
from bot.api.surface import Button
from bot.errors import SurfaceError

FALLBACK_CHARS = 300
LABEL_CHARS = 75
ACTION_ID_CHARS = 255
VALUE_CHARS = 2000
BUTTONS_PER_BLOCK = 25
ACTIONS_BLOCK_ID = "threadline-actions"

Block = dict[str, Any]


def message_payload(text: str, buttons: Sequence[Button] = ()) -> dict[str, Any]:
    """The ``text`` and ``blocks`` arguments of ``chat.postMessage`` / ``chat.update``."""
    if len(buttons) == 2 and all(is_feedback(b.action_id) for b in buttons):
        shown = [{"type": "markdown", "text": text}] if text else []
        return {
            "text": fallback(text or "Was this answer helpful?"),
            "blocks": [*shown, feedback_block((buttons[0], buttons[1]))],
        }
    blocks: list[Block] = [{"type": "markdown", "text": text}]
    for start in range(0, len(buttons), BUTTONS_PER_BLOCK):
        chunk = buttons[start : start + BUTTONS_PER_BLOCK]
        block_id = ACTIONS_BLOCK_ID if start == 0 else f"{ACTIONS_BLOCK_ID}-{start}"
        blocks.append({"type": "actions", "block_id": block_id, "elements": _buttons(chunk, start)})
    return {"text": fallback(text), "blocks": blocks}


def fallback(text: str) -> str:
    """A one-line excerpt for notifications, in mrkdwn (so ``& < >`` are escaped)."""
    line = " ".join(text.split())
    if len(line) > FALLBACK_CHARS:
        line = line[: FALLBACK_CHARS - 1] + "…"
    return line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") or " "


def _buttons(buttons: Sequence[Button], offset: int) -> list[Block]:
    elements: list[Block] = []
    seen: set[str] = set()
    for i, button in enumerate(buttons, start=offset):
        if len(button.action_id) > VALUE_CHARS:
            raise SurfaceError(f"a button's action id is over {VALUE_CHARS} characters")
        action_id = button.action_id
        if len(action_id) > ACTION_ID_CHARS or action_id in seen:
            action_id = f"threadline-{i}-{hashlib.sha256(action_id.encode()).hexdigest()[:32]}"
        seen.add(action_id)
        label = (
            button.label
            if len(button.label) <= LABEL_CHARS
            else button.label[: LABEL_CHARS - 1] + "…"
        )
        element: Block = {
            "type": "button",
            "action_id": action_id,
            "text": {"type": "plain_text", "text": label or "…", "emoji": True},
            "value": button.action_id,
        }
        if button.style != "default":
            element["style"] = button.style
        elements.append(element)
    return elements


def clicked_action(action: dict[str, Any]) -> str | None:
    """The opaque action id a clicked button carries."""
    value = action.get("value")
    if isinstance(value, str) and value:
        return value
    action_id = action.get("action_id")
    return action_id if isinstance(action_id, str) and action_id else None
