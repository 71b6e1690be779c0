"""The card of a form (or a link) an MCP server asks the run's person about: who asks, why,
the fields and their limits (or the link in full, with its host named), who may answer and
until when, and the buttons; once answered, what became of it (never the answer itself)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from urllib.parse import urlsplit

from bot.api.actions import AnswerForm, FormStep, encode
from bot.api.surface import Button, Style, Surface
from bot.errors import SurfaceError, SurfaceRateLimited
from bot.infra.clock import Clock
from bot.mcp.form_schema import Field
from bot.mcp.pending import FormStatus, PendingForm
from bot.present.approval_card import visible

log = logging.getLogger(__name__)
ATTEMPTS = 5
MAX_MESSAGE = 1_500
KINDS = {
    "string": "text",
    "number": "a number",
    "integer": "a whole number",
    "boolean": "yes or no",
    "choice": "one of",
    "choices": "any of",
}


def _button(step: FormStep, form: PendingForm, label: str, style: Style = "default") -> Button:
    return Button(encode(AnswerForm(step, form.id)), label, style)


def buttons(form: PendingForm) -> tuple[Button, ...]:
    if not form.waiting:
        return ()
    first = (
        _button("done", form, "I opened it: done", "primary")
        if form.link
        else _button("fill", form, "Fill in…", "primary")
    )
    return (first, _button("no", form, "Decline", "danger"), _button("cancel", form, "Cancel"))


def field_line(f: Field) -> str:
    kind = KINDS[f.kind]
    if f.options:
        kind += " " + ", ".join(o.title for o in f.options)
    hint = f.hint()
    if hint and f.kind in ("integer", "number"):
        kind, hint = f"{kind} {hint}", ""
    said = [kind, *(h for h in [hint] if h)]
    if f.required:
        said.append("required")
    if f.default is not None:
        said.append(f"default {shown_value(f, f.default)}")
    about = f" — {f.description}" if f.description else ""
    return f"• **{visible(f.title)}** ({'; '.join(said)}){visible(about)}"


def shown_value(f: Field, value: object) -> str:
    """A value as people read it: a choice by its title, several joined, yes or no."""
    titles = {o.value: o.title for o in f.options}
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(titles.get(str(v), str(v)) for v in value)
    return titles.get(str(value), str(value))


def _quote(text: str) -> str:
    cut = text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"
    return "\n".join(f"> {line}" for line in visible(cut).splitlines() or [""])


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")


def card_text(form: PendingForm, max_chars: int = 40_000) -> str:
    asked = form.asked
    server, who = f"`{asked.server}`", form.person_name
    what = "open a link" if form.link else "fill in a form"
    via = f" (while running `{asked.tool}`)" if asked.tool else ""
    heads = {
        FormStatus.WAITING: f"📝 **{server} asks {who} to {what}**{via}",
        FormStatus.SENT: f"✅ **Answered** by {who}: {server}'s {'link' if form.link else 'form'}",
        FormStatus.DECLINED: f"❌ **Declined** by {who}: {server}'s request",
        FormStatus.CANCELLED: f"↩️ **Cancelled** by {who}: {server}'s request",
        FormStatus.EXPIRED: f"⌛ **Expired**: nobody answered {server} in time",
        FormStatus.STOPPED: f"⏹️ **Closed**: the call asking {server}'s request ended first",
    }
    lines = [heads[form.status], _quote(asked.message)]
    if not form.waiting:
        return "\n".join(lines)
    if form.link:
        host = urlsplit(asked.url).hostname or "?"
        lines += [f"Link (to **{host}**): {visible(asked.url)}", "Open it, then press Done."]
    elif asked.form is not None:
        fields = [field_line(f) for f in asked.form.fields] or ["(no fields: just confirm)"]
        tail = f"Only {who} can answer. Expires at {_when(form.expires_at)}."
        room = max_chars - len("\n".join([*lines, tail])) - 80
        while fields and len("\n".join(fields)) > room:  # the rest shows in the form itself
            fields.pop()
        if len(fields) < len(asked.form.fields):
            fields.append(f"… and {len(asked.form.fields) - len(fields)} more: Fill in… shows them")
        return "\n".join([*lines, *fields, tail])
    lines.append(f"Only {who} can answer. Expires at {_when(form.expires_at)}.")
    return "\n".join(lines)


async def post_form_card(surface: Surface, clock: Clock, form: PendingForm) -> str:
    """Post the card; a rate limit is waited out (a card is never dropped)."""
    text = surface.render(card_text(form, surface.limits.max_chars))
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return await surface.post(text, buttons(form))
        except SurfaceRateLimited as exc:
            if attempt == ATTEMPTS:
                raise
            await clock.sleep(exc.retry_after)
    raise AssertionError("unreachable")


async def update_form_card(surface: Surface, clock: Clock, form: PendingForm) -> None:
    """Show what became of the form and remove its buttons; best effort after a few tries."""
    if form.card_id is None:
        return
    text = surface.render(card_text(form, surface.limits.max_chars))
    for _ in range(ATTEMPTS):
        try:
            await surface.edit(form.card_id, text, buttons(form), final=True)
            return
        except SurfaceRateLimited as exc:
            await clock.sleep(exc.retry_after)
        except SurfaceError:
            log.warning("could not update form card %s", form.card_id, exc_info=True)
            return
