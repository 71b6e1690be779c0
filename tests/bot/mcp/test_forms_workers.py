"""Forms with two workers on one PostgreSQL database (two cores, each with its own pool, as two
processes would have): the run, its MCP server and the call that waits are on worker a; the
person's clicks and answers reach worker b, which opens the form, checks the answer and records
it; a hears the nudge and its call gets the answer. Also: an answer that does not fit comes
back from b field by field (the form keeps waiting), an answer after a's expiry is refused, and
a form whose worker died is gone. A server built with the ``mcp`` SDK
(tests/fakes/mcp_asking_server.py), real cores and stores, a recording surface."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.api import actions
from bot.api.inbound import Inbound
from bot.config import McpServerSettings, Settings, ToolSettings
from bot.core import Core
from bot.infra.clock import SystemClock
from bot.llm.messages import ToolResult
from bot.mcp.forms import CLOSED, GONE
from bot.mcp.pending import FormStatus, PendingForm
from bot.mcp.servers import McpServers
from bot.storage.postgres.store import PostgresStore
from bot.tools.registry import ToolRegistry
from tests.bot.test_workers import ALICE, BOB, KEY, WAIT_S, Cluster, Model, kill, until
from tests.e2e.workers import until_rows
from tests.fakes.mcp_asking_server import stdio_command
from tests.fakes.scripted_model import call, step, text
from tests.fakes.surface import FakeMessage
from tests.postgres import fresh_schema, postgres_database

__all__ = ["postgres_database"]


@dataclass
class Pair:
    """Worker a (the run, its MCP server) and worker b (where the person's clicks land)."""

    cluster: Cluster
    a: Core
    b: Core
    mcp: McpServers
    work: Any = None

    @property
    def surface(self) -> Any:
        return self.cluster.platform.thread()

    def ask(self) -> None:
        self.work = asyncio.ensure_future(
            self.a.handle(Inbound(KEY, ALICE, "book me a seat", "e1"), self.surface)
        )

    async def card(self) -> FakeMessage:
        def shown() -> bool:
            return any(form_id(m) for m in self.surface.live())

        await until(shown)
        return next(m for m in self.surface.live() if form_id(m))

    async def result(self) -> dict[str, Any]:
        async with asyncio.timeout(WAIT_S):
            await self.work
        session = await self.a.store.load_session(KEY, SystemClock().now())
        [found] = [m.content for m in session.messages if isinstance(m, ToolResult)]
        answer: dict[str, Any] = json.loads(found.removeprefix("booking: "))
        return answer


def form_id(card: FakeMessage) -> str | None:
    for button in card.buttons:
        match actions.parse(button.action_id):
            case actions.AnswerForm(_, found):
                return found
            case _:
                pass
    return None


def button(card: FakeMessage, label: str) -> str:
    return next(b.action_id for b in card.buttons if b.label == label)


async def make_pair(cluster: Cluster, form_timeout_s: float) -> Pair:
    command = stdio_command()
    server = McpServerSettings(
        command=command[0], args=command[1:], timeout_s=60, form_timeout_s=form_timeout_s
    )
    cores: list[Core] = []
    mcp: McpServers | None = None
    for name, model in (
        ("a", Model(step(call("asking__book", {})), text("Booked."))),
        ("b", Model()),
    ):
        settings = Settings(
            data_dir=cluster.tmp_path / name,
            lease_ttl_s=2.0,
            worker_poll_s=5.0,  # the nudge wakes the waiting call, long before a poll would
            worker_id=name,
            workspace_tools=False,
            mcp_servers={"asking": server} if name == "a" else {},
            tools={"asking__book": ToolSettings(approval="never")},
        )
        registry = ToolRegistry([])
        core = Core(
            settings, PostgresStore(cluster.url, pool_size=4), model, registry, SystemClock()
        )
        if name == "a":
            mcp = McpServers(settings, core.clock, asking=core.asking)
            mcp.install(registry)
        core.register_surfaces("test:", cluster.platform.thread)
        await core.start()
        cluster.cores.append(core)
        cores.append(core)
    assert mcp is not None
    await mcp.start()
    return Pair(cluster, cores[0], cores[1], mcp)


@pytest.fixture
async def make(postgres_database: str, tmp_path: Path) -> AsyncIterator[Any]:
    cluster = Cluster(await fresh_schema(postgres_database), tmp_path)
    made: list[Pair] = []

    async def build(form_timeout_s: float = 600.0) -> Pair:
        pair = await make_pair(cluster, form_timeout_s)
        made.append(pair)
        return pair

    yield build
    for pair in made:
        if pair.work is not None:  # (a killed worker's run ends in an error: its pool is gone)
            pair.work.cancel()
            await asyncio.gather(pair.work, return_exceptions=True)
        await pair.mcp.aclose()
    await cluster.close()


async def stored(cluster: Cluster, found: str) -> tuple[str, str | None]:
    [row] = await cluster.sql("SELECT status, answer FROM mcp_forms WHERE form_id = $1", found)
    return row["status"], row["answer"]


async def test_a_form_is_opened_checked_and_answered_on_the_worker_without_the_call(
    make: Any,
) -> None:
    pair = await make()
    pair.ask()
    card = await pair.card()
    found = form_id(card)
    assert found is not None
    await until_rows(  # noted in the store as soon as it is posted
        pair.cluster.url,
        "SELECT 1 FROM mcp_forms WHERE form_id = $1 AND card_id = $2",
        found,
        card.id,
    )

    assert await pair.b.open_form(found, BOB) == "Only Alice can answer this."
    opened = await pair.b.open_form(found, ALICE)
    assert isinstance(opened, PendingForm) and opened.asked.form is not None
    assert [f.name for f in opened.asked.form.fields] == ["name", "seats", "cabin", "newsletter"]
    assert opened.card_id == card.id  # enough to show the modal and update the card

    wrong = await pair.b.answer_form(
        found, ALICE, {"name": "A", "seats": "9", "cabin": "first"}, pair.surface
    )
    assert dict(wrong.errors) == {
        "name": "must be at least 2 characters",
        "seats": "must be at most 4",
        "cabin": "pick one of: economy, business",
    }
    assert not wrong.done and await stored(pair.cluster, found) == ("waiting", None)
    assert isinstance(await pair.a.open_form(found, ALICE), PendingForm)  # still waits

    edits = pair.surface.edit_count(card.id)
    sent = await pair.b.answer_form(
        found, ALICE, {"name": "Ann", "seats": "2", "newsletter": True}, pair.surface
    )
    assert sent.done and sent.note == "Sent."
    assert await pair.result() == {
        "action": "accept",
        "content": {"name": "Ann", "seats": 2, "cabin": "economy", "newsletter": True},
    }
    shown = pair.surface.messages[card.id]
    assert "Answered** by Alice" in shown.text and shown.buttons == ()
    assert pair.surface.edit_count(card.id) == edits + 1  # by b alone: a did not edit it again
    await until(lambda: "Booked." in pair.cluster.platform.text())
    assert await stored(pair.cluster, found) == ("sent", None)  # read by a, then forgotten
    again = await pair.a.answer_form(found, ALICE, {"name": "Ann", "seats": "1"}, None)
    assert again.note == CLOSED[FormStatus.SENT] and not again.done


async def test_a_decline_clicked_on_the_other_worker_reaches_the_call(make: Any) -> None:
    pair = await make()
    pair.ask()
    card = await pair.card()
    note = await pair.b.on_action(button(card, "Decline"), BOB, pair.surface, card.id)
    assert note == "Only Alice can answer this."
    note = await pair.b.on_action(button(card, "Decline"), ALICE, pair.surface, card.id)
    assert note == "Declined."
    assert await pair.result() == {"action": "decline", "content": None}
    shown = pair.surface.messages[card.id]
    assert "Declined** by Alice" in shown.text and shown.buttons == ()


async def test_an_answer_after_the_owner_expired_the_form_is_refused(make: Any) -> None:
    pair = await make(form_timeout_s=1.0)
    pair.ask()
    card = await pair.card()
    found, decline = form_id(card), button(card, "Decline")
    assert found is not None
    assert await pair.result() == {"action": "cancel", "content": None}  # a's expiry
    assert "Expired" in pair.surface.messages[card.id].text

    late = await pair.b.answer_form(found, ALICE, {"name": "Ann", "seats": "2"}, pair.surface)
    assert late.note == CLOSED[FormStatus.EXPIRED] and not late.done
    clicked = await pair.b.on_action(decline, ALICE, pair.surface, card.id)
    assert clicked == CLOSED[FormStatus.EXPIRED]
    assert await stored(pair.cluster, found) == ("expired", None)


async def test_a_form_whose_worker_died_is_gone_and_its_buttons_go(make: Any) -> None:
    pair = await make()
    pair.ask()
    card = await pair.card()
    found = form_id(card)
    assert found is not None
    await until_rows(pair.cluster.url, "SELECT 1 FROM mcp_forms WHERE card_id = $1", card.id)
    await kill(pair.a)
    await pair.mcp.aclose()

    assert await pair.b.open_form(found, ALICE) == GONE
    assert await stored(pair.cluster, found) == ("stopped", None)
    shown = pair.surface.messages[card.id]
    assert "Closed" in shown.text and shown.buttons == ()
    late = await pair.b.answer_form(found, ALICE, {"name": "Ann", "seats": "2"}, pair.surface)
    assert late.note == CLOSED[FormStatus.STOPPED]
