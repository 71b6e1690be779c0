"""A form an MCP server asks for, as a Discord modal: the card's "Fill in…" is answered with
the modal itself (the click's one response), one text input a field (Discord's modals hold five
at most; a form with more is refused with a note), each labelled with its kind and limits and
holding its default. Choices are typed (their value or title; several separated by commas),
yes/no as words: the core reads and checks every answer against the form's schema, and a
form that does not fit comes back as a note, field by field, to be sent again."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import discord

from adapters.discord.surface import NO_PINGS
from bot.api.forms import Field, FormReply, PendingForm

log = logging.getLogger(__name__)

MAX_FIELDS = 5
TIMEOUT_S = 15 * 60
TOO_MANY = (
    "This form has {count} fields, more than a Discord form holds ({most}): Decline or Cancel"
    " it, or answer it where the thread can show it whole."
)
Send = Callable[[Mapping[str, Any]], Awaitable[FormReply]]
"""The core's ``answer_form`` for this form, person and thread."""


def _label(f: Field) -> str:
    words = {"boolean": "yes or no", "choices": "comma-separated"}.get(f.kind, "")
    label = f"{f.title} ({words})" if words else f.title
    return label if len(label) <= 45 else label[:44] + "…"


def _placeholder(f: Field) -> str:
    said = [", ".join(o.title for o in f.options) if f.options else "", f.hint(), f.description]
    text = " · ".join(s for s in said if s)
    return text if len(text) <= 100 else text[:99] + "…"


def _default(f: Field) -> str | None:
    """The default as typed: a choice by its title (read back by title or value)."""
    if f.default is None:
        return None
    titles = {o.value: o.title for o in f.options}
    if isinstance(f.default, bool):
        return "yes" if f.default else "no"
    if isinstance(f.default, list):
        return ", ".join(titles.get(v, v) for v in f.default)
    return titles.get(str(f.default), str(f.default))


class FormModal(discord.ui.Modal):
    def __init__(self, form: PendingForm, send: Send) -> None:
        super().__init__(
            title=f"{form.asked.server} asks"[:45],
            custom_id=f"mcp-form:{form.id}"[:100],
            timeout=TIMEOUT_S,
        )
        self.send = send
        self.inputs: dict[str, discord.ui.TextInput[FormModal]] = {}
        fields = form.asked.form.fields if form.asked.form is not None else ()
        for f in fields:
            long = f.kind == "string" and (f.max is None or f.max > 100)
            item: discord.ui.TextInput[FormModal] = discord.ui.TextInput(
                label=_label(f),
                custom_id=f"f:{f.name}"[:100],
                placeholder=_placeholder(f) or None,
                default=_default(f),
                required=f.required and f.default is None and f.kind != "boolean",
                style=discord.TextStyle.paragraph if long else discord.TextStyle.short,
                max_length=min(int(f.max), 4000) if f.kind == "string" and f.max else 4000,
            )
            self.inputs[f.name] = item
            self.add_item(item)
        self.fields = {f.name: f for f in fields}

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, item in self.inputs.items():
            typed = item.value
            if self.fields[name].kind == "choices":
                out[name] = [p.strip() for p in typed.split(",") if p.strip()]
            else:
                out[name] = typed
        return out

    async def on_submit(self, interaction: discord.Interaction[Any]) -> None:
        try:
            await interaction.response.defer(ephemeral=True, thinking=True)
        except discord.HTTPException as exc:
            log.warning("could not acknowledge a form: %s %s", exc.status, exc.text)
            return
        try:
            reply = await self.send(self.values())
            note = reply.note
            if reply.errors:
                wrong = "\n".join(
                    f"• {self.fields[n].title if n in self.fields else n}: {e}"
                    for n, e in reply.errors.items()
                )
                note = f"{note}\n{wrong}\nPress Fill in… again to send it once more."
        except Exception:
            log.exception("a form sent by %s failed", interaction.user.id)
            note = "Something went wrong; the server log has the details."
        try:
            await interaction.followup.send(note, ephemeral=True, allowed_mentions=NO_PINGS)
        except discord.HTTPException as exc:
            log.warning("could not answer a form: %s %s", exc.status, exc.text)


async def open_form(interaction: discord.Interaction[Any], form: PendingForm, send: Send) -> bool:
    """Answer a "Fill in…" with the form's modal; False when it cannot be (too many fields, or
    Discord refused it): the click then goes on as any other."""
    count = len(form.asked.form.fields) if form.asked.form is not None else 0
    if count > MAX_FIELDS:
        note = TOO_MANY.format(count=count, most=MAX_FIELDS)
        try:
            await interaction.response.send_message(note, ephemeral=True)
        except discord.HTTPException as exc:
            log.warning("could not say a form is too long: %s %s", exc.status, exc.text)
        return True
    try:
        await interaction.response.send_modal(FormModal(form, send))
    except discord.HTTPException as exc:
        log.warning("could not open a form: %s %s", exc.status, exc.text)
        return False
    return True
