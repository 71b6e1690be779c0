"""A form an MCP server asks for, as Discord modals: the card's "Fill in…" is answered with the
modal itself (the click's one response), one text input a field, each labelled with its kind
and limits and holding its default. Choices are typed (their value or title; several separated
by commas), yes/no as words: the core reads and checks every answer against the form's schema,
and a form that does not fit comes back as a note, field by field, to be sent again.

A Discord modal holds five inputs, so a longer form is shown as pages, one modal each ("… asks
(1/3)"). Discord cannot answer a modal's submit with another modal: a page that is not the last
is answered with a private note holding **Continue (2/3)**, whose click opens the next page.
What the person typed is kept (:class:`TypedForms`, in memory, per form and person) until the
last page sends the whole form to the core at once; after a note it is kept as the defaults of
the form opened again, and it goes when the form is sent or no longer waits."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import discord

from adapters.discord.identity import author_of
from adapters.discord.surface import NO_PINGS
from bot.api.forms import Field, FormReply, PendingForm
from bot.api.kit import Clock

log = logging.getLogger(__name__)

MAX_FIELDS = 5
"""Text inputs a Discord modal holds: a page of a form."""
TIMEOUT_S = 15 * 60
MAX_KEPT = 200
"""Forms whose pages are kept at once; past it, the one that expires first is forgotten."""
GONE = "This form is no longer waiting."
FORGOTTEN = "The earlier pages of this form were forgotten: press Fill in… to start again."
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


def pages_of(form: PendingForm) -> list[tuple[Field, ...]]:
    """The form's fields, five to a page (one page for a form of five fields or fewer)."""
    fields = form.asked.form.fields if form.asked.form is not None else ()
    return [tuple(fields[i : i + MAX_FIELDS]) for i in range(0, len(fields), MAX_FIELDS)] or [()]


def _values(fields: Sequence[Field], typed: Mapping[str, str]) -> dict[str, Any]:
    """The typed texts as the core reads them: a multiple choice split at its commas."""
    out: dict[str, Any] = {}
    for f in fields:
        text = typed.get(f.name, "")
        out[f.name] = (
            [p.strip() for p in text.split(",") if p.strip()] if f.kind == "choices" else text
        )
    return out


class TypedForms:
    """What people typed in the forms they fill in, by form and person: the pages sent so far
    of a form longer than one modal, and the defaults of a form opened again after a note.

    In memory and bounded (:data:`MAX_KEPT`); a form's texts go when it is sent, when it no
    longer waits and when it expires."""

    def __init__(self, clock: Clock, most: int = MAX_KEPT) -> None:
        self._clock = clock
        self._most = most
        self._kept: dict[tuple[str, str], tuple[PendingForm, dict[str, str]]] = {}

    def __len__(self) -> int:
        self._prune()
        return len(self._kept)

    def typed(self, form: PendingForm, person_id: str) -> dict[str, str]:
        self._prune()
        found = self._kept.get((form.id, person_id))
        return dict(found[1]) if found is not None else {}

    def keep(self, form: PendingForm, person_id: str, typed: Mapping[str, str]) -> None:
        self._prune()
        key = (form.id, person_id)
        texts = self._kept[key][1] if key in self._kept else {}
        texts.update(typed)
        self._kept[key] = (form, texts)
        while len(self._kept) > self._most:
            first = min(self._kept, key=lambda k: self._kept[k][0].expires_at)
            del self._kept[first]

    def forget(self, form: PendingForm, person_id: str) -> None:
        self._kept.pop((form.id, person_id), None)

    def _prune(self) -> None:
        now = self._clock.now()
        for key, (form, _) in list(self._kept.items()):
            if not form.waiting or form.expires_at <= now:
                del self._kept[key]


class FormModal(discord.ui.Modal):
    """One page of a form (the whole form when it has five fields or fewer)."""

    def __init__(self, form: PendingForm, send: Send, kept: TypedForms, page: int = 0) -> None:
        pages = pages_of(form)
        count = f" ({page + 1}/{len(pages)})" if len(pages) > 1 else ""
        super().__init__(
            title=f"{form.asked.server[: 45 - len(' asks') - len(count)]} asks{count}",
            custom_id=f"mcp-form:{form.id}" + (f":{page + 1}" if count else ""),
            timeout=TIMEOUT_S,
        )
        self.form, self.send, self.kept, self.page, self.pages = form, send, kept, page, pages
        typed = self.kept.typed(form, form.person_id)
        self.inputs: dict[str, discord.ui.TextInput[FormModal]] = {}
        for f in pages[page]:
            long = f.kind == "string" and (f.max is None or f.max > 100)
            item: discord.ui.TextInput[FormModal] = discord.ui.TextInput(
                label=_label(f),
                custom_id=f"f:{f.name}"[:100],
                placeholder=_placeholder(f) or None,
                default=typed.get(f.name) or _default(f),
                required=f.required and f.default is None and f.kind != "boolean",
                style=discord.TextStyle.paragraph if long else discord.TextStyle.short,
                max_length=min(int(f.max), 4000) if f.kind == "string" and f.max else 4000,
            )
            self.inputs[f.name] = item
            self.add_item(item)

    @property
    def last(self) -> bool:
        return self.page == len(self.pages) - 1

    def typed(self) -> dict[str, str]:
        return {name: item.value for name, item in self.inputs.items()}

    async def on_submit(self, interaction: discord.Interaction[Any]) -> None:
        try:
            await interaction.response.defer(ephemeral=True, thinking=True)
        except discord.HTTPException as exc:
            log.warning("could not acknowledge a form: %s %s", exc.status, exc.text)
            return
        view: discord.ui.View | None = None
        self.kept.keep(self.form, self.form.person_id, self.typed())
        if not self.last:
            view = Continue(self.form, self.send, self.kept, self.page + 1)
            note = f"Page {self.page + 1} of {len(self.pages)} is kept."
        else:
            note = await self._send_all(interaction)
        try:
            if view is None:
                await interaction.followup.send(note, ephemeral=True, allowed_mentions=NO_PINGS)
            else:
                await interaction.followup.send(
                    note, ephemeral=True, allowed_mentions=NO_PINGS, view=view
                )
        except discord.HTTPException as exc:
            log.warning("could not answer a form: %s %s", exc.status, exc.text)

    async def _send_all(self, interaction: discord.Interaction[Any]) -> str:
        """The whole form sent to the core; the note to show."""
        typed = self.kept.typed(self.form, self.form.person_id)
        fields = [f for page in self.pages for f in page]
        if any(f.name not in typed for f in fields):
            return FORGOTTEN
        try:
            reply = await self.send(_values(fields, typed))
        except Exception:
            log.exception("a form sent by %s failed", interaction.user.id)
            return "Something went wrong; the server log has the details."
        if not reply.errors:
            self.kept.forget(self.form, self.form.person_id)
            return reply.note
        return f"{reply.note}\n{self._wrong(reply.errors)}"

    def _wrong(self, errors: Mapping[str, str]) -> str:
        """The fields that do not fit, each with its page when there are several."""
        where = {f.name: (f, n) for n, page in enumerate(self.pages, 1) for f in page}

        def line(name: str, error: str) -> str:
            if name not in where:
                return f"• {name}: {error}"
            f, n = where[name]
            page = f" (page {n} of {len(self.pages)})" if len(self.pages) > 1 else ""
            return f"• {f.title}{page}: {error}"

        wrong = "\n".join(line(n, e) for n, e in errors.items())
        return f"{wrong}\nPress Fill in… again to send it once more (what you typed is kept)."


class Continue(discord.ui.View):
    """The note after a page that is not the last: its button opens the next page, for the
    form's person only."""

    def __init__(self, form: PendingForm, send: Send, kept: TypedForms, page: int) -> None:
        super().__init__(timeout=TIMEOUT_S)
        self.form, self.send, self.kept, self.page = form, send, kept, page
        button: discord.ui.Button[Continue] = discord.ui.Button(
            label=f"Continue ({page + 1}/{len(pages_of(form))})",
            style=discord.ButtonStyle.primary,
            custom_id=f"mcp-form-next:{form.id}:{page + 1}",
        )
        button.callback = self.next_page  # type: ignore[method-assign]
        self.add_item(button)

    async def next_page(self, interaction: discord.Interaction[Any]) -> None:
        refusal = None
        if author_of(interaction.user).id != self.form.person_id:
            refusal = f"Only {self.form.person_name} can answer this."
        elif not self.form.waiting:
            refusal = GONE
        try:
            if refusal is not None:
                await interaction.response.send_message(refusal, ephemeral=True)
            else:
                modal = FormModal(self.form, self.send, self.kept, self.page)
                await interaction.response.send_modal(modal)
        except discord.HTTPException as exc:
            log.warning("could not open a form's next page: %s %s", exc.status, exc.text)


async def open_form(
    interaction: discord.Interaction[Any],
    form: PendingForm,
    send: Send,
    kept: TypedForms,
) -> bool:
    """Answer a "Fill in…" with the form's modal (its first page, with what the person typed
    before); False when Discord refused it: the click then goes on as any other."""
    try:
        await interaction.response.send_modal(FormModal(form, send, kept))
    except discord.HTTPException as exc:
        log.warning("could not open a form: %s %s", exc.status, exc.text)
        return False
    return True
