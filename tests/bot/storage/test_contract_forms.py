"""The store contract for forms shown in threads (:mod:`bot.mcp.form_rows`): a row kept as
shown, closed once by compare-and-set (an answer refused once the form expired), the answer
read once and then forgotten, a restarted worker's forms stopped. Run on every implementation;
two stores opened on the same data stand for two workers."""

from __future__ import annotations

import asyncio

from bot.mcp.asking import Answer, FormAsked
from bot.mcp.form_rows import KEPT_S, FormRow
from bot.mcp.form_schema import Form
from bot.mcp.pending import FormStatus
from bot.storage.protocol import Store
from tests.bot.storage.conftest import Stores

NOW = 1_700_000_000.0
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 2},
        "seats": {"type": "integer", "minimum": 1, "maximum": 4, "default": 1},
        "extras": {"type": "array", "items": {"enum": ["bag", "meal"]}},
        "newsletter": {"type": "boolean"},
    },
    "required": ["name"],
}
ASKED = FormAsked("tickets", "tickets__book", "Who is travelling?", Form.read("Who?", SCHEMA))


def row(form_id: str = "f1", owner: str = "a", *, at: float = NOW) -> FormRow:
    return FormRow(
        form_id,
        "slack:T1:C1:1.1",
        "slack:U1",
        "Alice",
        ASKED,
        owner,
        FormStatus.WAITING,
        at,
        at + 900,
    )


async def test_a_form_is_kept_as_shown_and_its_card_noted(stores: Stores, store: Store) -> None:
    await store.add_form(row())
    await store.add_form(row())  # shown once: a second add changes nothing
    await store.set_form_card("f1", "m-7")
    store = await stores.reopen(store)

    found = await store.get_form("f1")
    assert found is not None
    assert found == FormRow(
        "f1",
        "slack:T1:C1:1.1",
        "slack:U1",
        "Alice",
        ASKED,
        "a",
        FormStatus.WAITING,
        NOW,
        NOW + 900,
        "m-7",
    )
    assert found.form().asked.form == ASKED.form  # enough to show it again and check answers
    assert await store.get_form("nope") is None


async def test_a_form_is_closed_once_and_its_answer_read_once(stores: Stores, store: Store) -> None:
    other = await stores.open()  # another worker on the same data
    await store.add_form(row())
    answer = Answer("accept", {"name": "Ann", "seats": 2, "extras": ["bag"], "newsletter": False})
    assert await other.close_form("f1", FormStatus.SENT, answer, NOW + 10)
    assert not await store.close_form("f1", FormStatus.EXPIRED, None, None)  # too late
    assert not await other.close_form("f1", FormStatus.DECLINED, Answer("decline"), NOW + 11)

    taken = await store.take_form_answer("f1")
    assert taken is not None and taken.status is FormStatus.SENT and taken.answer == answer
    again = await store.take_form_answer("f1")  # the owner read it: it is forgotten
    assert again is not None and again.status is FormStatus.SENT and again.answer is None
    found = await other.get_form("f1")
    assert found is not None and found.answer is None


async def test_only_one_of_two_racing_closes_wins(stores: Stores, store: Store) -> None:
    other = await stores.open()
    await store.add_form(row())
    won = await asyncio.gather(
        store.close_form("f1", FormStatus.STOPPED, None, None),
        other.close_form("f1", FormStatus.SENT, Answer("accept", {"name": "Ann"}), NOW),
    )
    assert sorted(won) == [False, True]


async def test_an_answer_after_the_expiry_is_refused(store: Store) -> None:
    await store.add_form(row())
    assert not await store.close_form("f1", FormStatus.SENT, Answer("accept"), NOW + 900)
    found = await store.get_form("f1")
    assert found is not None and found.status is FormStatus.WAITING and found.answer is None
    assert await store.close_form("f1", FormStatus.EXPIRED, None, None)  # its owner's expiry


async def test_a_restarted_workers_forms_are_stopped_and_their_answers_forgotten(
    store: Store,
) -> None:
    await store.add_form(row("f1", "a"))
    await store.add_form(row("f2", "a"))
    await store.add_form(row("f3", "b"))
    assert await store.close_form("f2", FormStatus.SENT, Answer("accept", {"name": "A"}), NOW)
    assert await store.stop_forms_of("a") == 1
    assert await store.stop_forms_of("a") == 0
    statuses = {f: (await store.get_form(f)) for f in ("f1", "f2", "f3")}
    assert {f: r.status for f, r in statuses.items() if r is not None} == {
        "f1": FormStatus.STOPPED,
        "f2": FormStatus.SENT,
        "f3": FormStatus.WAITING,
    }
    assert all(r is not None and r.answer is None for r in statuses.values())


async def test_forms_expired_a_day_before_a_new_one_go(store: Store) -> None:
    await store.add_form(row("old", at=NOW))
    await store.add_form(row("new", at=NOW + 900 + KEPT_S + 1))
    assert await store.get_form("old") is None
    assert await store.get_form("new") is not None
