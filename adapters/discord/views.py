"""Buttons that survive a restart: the action id travels in the button's ``custom_id``.

Every button Threadline posts is an :class:`ActionButton` with ``custom_id`` ``tl:<action id>``.
The class is registered in ``setup_hook`` (``Client.add_dynamic_items``), so a click on any
such button — also one posted before the process restarted — is rebuilt from its
``custom_id`` and handed to the click handler with the opaque action id. Views are never kept
in memory: :func:`build_view` stops the view before it is sent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import discord

from bot.api.surface import Button
from bot.errors import SurfaceError

PREFIX = "tl:"
MAX_CUSTOM_ID = 100
MAX_LABEL = 80
MAX_BUTTONS = 25
STYLES = {
    "primary": discord.ButtonStyle.primary,
    "danger": discord.ButtonStyle.danger,
    "default": discord.ButtonStyle.secondary,
}


@runtime_checkable
class ClickHandler(Protocol):
    async def on_click(self, interaction: discord.Interaction[Any], action_id: str) -> None: ...


@runtime_checkable
class HasClickHandler(Protocol):
    @property
    def clicks(self) -> ClickHandler: ...


class ActionButton(
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=re.compile(rf"^{PREFIX}(?P<action>.+)$", re.S),
):
    def __init__(self, action_id: str, label: str, style: discord.ButtonStyle) -> None:
        super().__init__(discord.ui.Button(label=label, style=style, custom_id=PREFIX + action_id))
        self.action_id = action_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: discord.ui.Item[Any], match: re.Match[str]
    ) -> ActionButton:
        label = getattr(item, "label", None) or "…"
        style = getattr(item, "style", discord.ButtonStyle.secondary)
        return cls(match["action"], label, style)

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        client = interaction.client
        if isinstance(client, HasClickHandler):
            await client.clicks.on_click(interaction, self.action_id)


def build_view(buttons: Sequence[Button]) -> discord.ui.View | None:
    """The buttons as a view to send, or None (which also clears a message's buttons)."""
    if not buttons:
        return None
    if len(buttons) > MAX_BUTTONS:
        raise SurfaceError(f"{len(buttons)} buttons; a Discord message holds {MAX_BUTTONS}")
    view = discord.ui.View(timeout=None)
    for button in buttons:
        if len(PREFIX + button.action_id) > MAX_CUSTOM_ID:
            raise SurfaceError(
                f"action id {button.action_id[:20]!r}… is too long for a Discord button"
            )
        label = button.label.strip()[:MAX_LABEL] or "…"
        view.add_item(ActionButton(button.action_id, label, STYLES[button.style]))
    view.stop()  # clicks come back through ActionButton, not through this object
    return view
