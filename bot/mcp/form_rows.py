"""Forms as the store keeps them, so that any worker sharing the store can answer one: a click on
a form's card, or its modal sent, may reach a worker other than the one whose call waits (Slack
spreads its events over the workers' connections; a load balancer spreads HTTP requests).

A row is written before the card shows: the form's id, its thread, its person, what was asked
(enough to show the form again and check an answer against its schema), its expiry, its card
and the worker whose call waits (its *owner*). It leaves ``waiting`` once, by compare-and-set
(:meth:`FormStore.close_form`), whoever closes it: the person's answer on any worker, or the
owner's expiry or Stop. An answer given on another worker travels in the row to the owner, who
reads it once and clears it (:meth:`FormStore.take_form_answer`): what a person typed is kept
no longer than that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import TypeAdapter

from bot.mcp.asking import Answer, FormAsked
from bot.mcp.pending import FormStatus, PendingForm

KEPT_S = 86_400.0
"""A form expired this long before a new one is shown goes."""
COLUMNS = (
    "form_id, key, person_id, person_name, asked, owner, status, card_id, answer, created_at,"
    " expires_at"
)
"""The columns of ``mcp_forms``, in the order :meth:`FormRow.values` gives them."""
_ASKED: TypeAdapter[FormAsked] = TypeAdapter(FormAsked)
_ANSWER: TypeAdapter[Answer] = TypeAdapter(Answer)


@dataclass(frozen=True, slots=True)
class FormRow:
    form_id: str
    key: str
    person_id: str
    person_name: str
    asked: FormAsked
    owner: str
    """The worker whose call waits for the answer ('' for a process alone on its store)."""
    status: FormStatus
    created_at: float
    expires_at: float
    card_id: str | None = None
    answer: Answer | None = None
    """An answer given on another worker, until the owner read it."""

    @classmethod
    def of(cls, form: PendingForm, owner: str, now: float) -> FormRow:
        return cls(
            form.id,
            form.key,
            form.person_id,
            form.person_name,
            form.asked,
            owner,
            form.status,
            now,
            form.expires_at,
            form.card_id,
        )

    def values(self) -> tuple[Any, ...]:
        """The row's values, in the order of :data:`COLUMNS`."""
        return (
            self.form_id,
            self.key,
            self.person_id,
            self.person_name,
            _ASKED.dump_json(self.asked).decode(),
            self.owner,
            self.status.value,
            self.card_id,
            answer_json(self.answer),
            self.created_at,
            self.expires_at,
        )

    @classmethod
    def read(cls, values: Sequence[Any]) -> FormRow:
        """The row a store read, its values in the order of :data:`COLUMNS`."""
        form_id, key, person_id, person_name, asked, owner, status, card, answer, made, ends = (
            values
        )
        return cls(
            form_id=str(form_id),
            key=str(key),
            person_id=str(person_id),
            person_name=str(person_name),
            asked=_ASKED.validate_json(str(asked)),
            owner=str(owner),
            status=FormStatus(str(status)),
            created_at=float(made),
            expires_at=float(ends),
            card_id=None if card is None else str(card),
            answer=None if answer is None else _ANSWER.validate_json(str(answer)),
        )

    def form(self) -> PendingForm:
        """The form as its card shows it (for any worker: to open it, check an answer, update
        its card)."""
        return PendingForm(
            self.form_id,
            self.key,
            self.person_id,
            self.person_name,
            self.asked,
            self.expires_at,
            self.status,
            self.card_id,
        )


class FormStore(Protocol):
    async def add_form(self, row: FormRow) -> None:
        """Keep ``row`` (rows that expired :data:`KEPT_S` before it was made go)."""
        ...

    async def get_form(self, form_id: str) -> FormRow | None: ...

    async def set_form_card(self, form_id: str, card_id: str) -> None: ...

    async def close_form(
        self, form_id: str, status: FormStatus, answer: Answer | None, now: float | None
    ) -> bool:
        """Move the form from waiting to ``status`` (with ``answer``, for its owner to read),
        if it waits (and, given ``now``, has not expired at ``now``); True when this call did
        (exactly one caller ever does)."""
        ...

    async def take_form_answer(self, form_id: str) -> FormRow | None:
        """The row with the answer it holds, which the store forgets now (the owner read it)."""
        ...

    async def stop_forms_of(self, owner: str) -> int:
        """The forms ``owner`` showed that still wait are stopped and the answers it did not
        read forgotten (it restarted: their calls ended with it); how many were waiting."""
        ...


def answer_json(answer: Answer | None) -> str | None:
    return None if answer is None else _ANSWER.dump_json(answer).decode()
