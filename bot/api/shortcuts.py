"""Shortcuts on a message of a thread, where slash commands do not reach (Slack has none inside
threads): Slack message shortcuts and Discord message commands, one set for both.

Each shortcut has a callback id (``threadline_stop``…, declared in the Slack manifests) and a
name people see. An adapter reads which shortcut was used and on which thread's message, and
calls :meth:`bot.api.port.CoreApi.on_shortcut`; the core decides (the policy, whether the
thread is the bot's) and returns a :class:`Note` for the person alone, with buttons when it
asks to confirm (reset).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.api.surface import Button

Shortcut = Literal["stop", "status", "quiet", "reset"]
CALLBACK_PREFIX = "threadline_"
SHORTCUTS: dict[Shortcut, tuple[str, str]] = {
    "stop": ("Stop Threadline", "Stop the run in progress in this thread"),
    "status": ("Threadline status", "Model, state, usage and todos of this thread"),
    "quiet": ("Quiet or listen", "Answer this thread only when mentioned, or every message again"),
    "reset": ("Reset Threadline", "Forget this thread's conversation (asks to confirm)"),
}
"""Each shortcut's name (as people see it; at most 32 characters, a Discord limit) and its
description (at most 100)."""


@dataclass(frozen=True, slots=True)
class Note:
    """What the person who used a shortcut sees, privately."""

    text: str
    buttons: tuple[Button, ...] = ()


def callback_id(shortcut: Shortcut) -> str:
    return CALLBACK_PREFIX + shortcut


def read(callback: str) -> Shortcut | None:
    """The shortcut a callback id (``threadline_stop``) or a name (``Stop Threadline``) stands
    for; None for anything else."""
    for shortcut, (name, _) in SHORTCUTS.items():
        if callback in (callback_id(shortcut), name):
            return shortcut
    return None
