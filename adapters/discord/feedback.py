"""The "what went wrong?" modal a 👎 opens on Discord, and what its sending does.

A 👎 is answered with the modal itself (the interaction's one response), before the click is
recorded; the modal's ``custom_id`` carries the form's id (:func:`bot.api.actions.explain_after`).
discord.py keeps the modal until it is sent or times out; its answer goes to the person alone.
The 👍 / 👎 buttons themselves are ordinary buttons (small, grey) on a message under the answer.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import discord

from adapters.discord.identity import author_of
from adapters.discord.surface import NO_PINGS
from bot.api.inbound import Author

log = logging.getLogger(__name__)

NOTE_CHARS = 500
TIMEOUT_S = 15 * 60
"""How long the modal waits to be sent (Discord's interaction token lasts as long)."""
Explain = Callable[[str, Author, str], Awaitable[str]]
"""The core's ``explain(form_id, actor, text)``."""


class WhyModal(discord.ui.Modal):
    def __init__(self, form_id: str, explain: Explain) -> None:
        super().__init__(title="What went wrong?", custom_id=form_id[:100], timeout=TIMEOUT_S)
        self.form_id = form_id
        self.explain = explain
        self.line: discord.ui.TextInput[WhyModal] = discord.ui.TextInput(
            label="In one line", max_length=NOTE_CHARS, custom_id="why"
        )
        self.add_item(self.line)

    async def on_submit(self, interaction: discord.Interaction[Any]) -> None:
        try:
            await interaction.response.defer(ephemeral=True, thinking=True)
        except discord.HTTPException as exc:
            log.warning("could not acknowledge the feedback form: %s %s", exc.status, exc.text)
            return
        try:
            note = await self.explain(self.form_id, author_of(interaction.user), self.line.value)
        except Exception:
            log.exception("the feedback form of %s failed", interaction.user.id)
            note = "Something went wrong; the server log has the details."
        try:
            await interaction.followup.send(note, ephemeral=True, allowed_mentions=NO_PINGS)
        except discord.HTTPException as exc:
            log.warning("could not answer the feedback form: %s %s", exc.status, exc.text)


async def ask_why(interaction: discord.Interaction[Any], form_id: str, explain: Explain) -> bool:
    """Answer a 👎 with the modal; False when Discord refused it (the click still counts)."""
    try:
        await interaction.response.send_modal(WhyModal(form_id, explain))
    except discord.HTTPException as exc:
        log.warning("could not ask what went wrong: %s %s", exc.status, exc.text)
        return False
    return True
