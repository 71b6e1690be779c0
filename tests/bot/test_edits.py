"""Edits: a person's new text for the message the bot is answering, or has just answered, starts
its answer again — the old answer marked replaced, the model reading the new text only — and
changes nothing otherwise (a message the bot never saw, one others wrote after, too late, the
same text, a redelivery). An edit accepted just before a restart is applied once after it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from bot.api.inbound import Author, Inbound, ThreadKey
from bot.llm.messages import AssistantMessage, UserMessage
from bot.llm.model import ModelPiece, ModelRequest
from bot.thread.edits import EDIT_WINDOW_S, REPLACED
from tests.bot.world import ALICE, BOB, KEY, NOW, World
from tests.fakes.scripted_model import ScriptedModel, call, step, text
from tests.fakes.surface import drive, run_until


def question(words: str, message_id: str, event_id: str, author: Author = ALICE) -> Inbound:
    return Inbound(ThreadKey(KEY), author, words, event_id, message_id=message_id)


def edit(words: str, message_id: str, event_id: str, *, posted_at: float = NOW) -> Inbound:
    return Inbound(
        ThreadKey(KEY),
        ALICE,
        words,
        event_id,
        message_id=message_id,
        posted_at=posted_at,
        addressed=False,
    )


async def handle(world: World, inbound: Inbound) -> None:
    await drive(world.clock, world.core.handle(inbound, world.thread()))
    await drive(world.clock, world.core.wait_idle())


def said(world: World) -> list[str]:
    return [m.text for m in world.thread().live()]


async def transcript(world: World) -> list[tuple[str, str]]:
    session = await world.core.store.load_session(ThreadKey(KEY), world.clock.now())
    return [
        (m.role, m.text) for m in session.messages if isinstance(m, UserMessage | AssistantMessage)
    ]


async def test_an_edit_after_the_answer_replaces_it_and_answers_the_new_text(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    await world.core.start()
    try:
        world.model.steps = [text("Paris."), text("Rome.")]
        await handle(world, question("capital of France?", "100.2", "ev1"))
        assert said(world) == ["Paris."]
        await handle(world, edit("capital of Italy?", "100.2", "ev2"))
        assert said(world) == [REPLACED, "Rome."]
        seen = world.model.requests[-1].messages
        assert [
            (m.role, m.text) for m in seen if isinstance(m, UserMessage | AssistantMessage)
        ] == [("user", "capital of Italy?")], (
            "the model reads the new text only, not the old one nor its answer"
        )
        assert await transcript(world) == [("user", "capital of Italy?"), ("assistant", "Rome.")]
        # edited again: the second answer is replaced the same way
        world.model.steps = [text("Madrid.")]
        await handle(world, edit("capital of Spain?", "100.2", "ev3"))
        assert said(world) == [REPLACED, REPLACED, "Madrid."]
    finally:
        await world.core.aclose()


async def test_edits_that_change_nothing(tmp_path: Path) -> None:
    world = World(tmp_path)
    await world.core.start()
    try:
        world.model.steps = [text("Paris.")]
        await handle(world, question("capital of France?", "100.2", "ev1"))
        late = NOW - EDIT_WINDOW_S - 1
        for nothing in (
            edit("capital of France?", "100.2", "e-same"),  # the same text (a link unfurled)
            edit("something else", "100.9", "e-unseen"),  # a message the bot never saw
            edit("capital of Peru?", "100.2", "e-late", posted_at=late),  # too late
            edit("  ", "100.2", "e-empty"),  # no words (Discord without the content intent)
        ):
            await handle(world, nothing)
        elsewhere = Inbound(  # in a thread the bot is not in
            ThreadKey("slack:T1:C1:555.1"),
            ALICE,
            "hi",
            "e-x",
            message_id="555.1",
            posted_at=NOW,
            addressed=False,
        )
        await handle(world, elsewhere)
        assert said(world) == ["Paris."]
        assert len(world.model.requests) == 1
        assert await world.core.deliveries.left_over() == [], "no arrival is left behind"

        world.model.steps = [text("Lima.")]
        await handle(world, question("and Peru?", "100.3", "ev4", author=BOB))
        await handle(world, edit("capital of Japan?", "100.2", "e-after"))  # Bob wrote since
        assert said(world) == ["Paris.", "Lima."]
        assert len(world.model.requests) == 2
    finally:
        await world.core.aclose()


async def test_a_redelivered_edit_reruns_once(tmp_path: Path) -> None:
    world = World(tmp_path)
    await world.core.start()
    try:
        world.model.steps = [text("Paris."), text("Rome.")]
        await handle(world, question("capital of France?", "100.2", "ev1"))
        again = edit("capital of Italy?", "100.2", "ev2")
        await handle(world, again)
        await handle(world, again)
        assert said(world) == [REPLACED, "Rome."]
        assert len(world.model.requests) == 2
    finally:
        await world.core.aclose()


@dataclass
class HeldModel(ScriptedModel):
    """Its first call waits until ``release`` is set (or the run is stopped)."""

    release: asyncio.Event = field(default_factory=asyncio.Event)
    started: asyncio.Event = field(default_factory=asyncio.Event)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        first = not self.requests
        pieces = [p async for p in super().stream(request)]
        if first:
            self.started.set()
            yield pieces[0]
            await self.release.wait()
            pieces = pieces[1:]
        for piece in pieces:
            yield piece


async def test_an_edit_during_the_run_stops_it_and_answers_the_new_text(tmp_path: Path) -> None:
    model = HeldModel([text("Par", "is, and more."), text("Rome.")])
    world = World(tmp_path, model=model)
    await world.core.start()
    try:
        first = asyncio.ensure_future(
            world.core.handle(question("capital of France?", "100.2", "ev1"), world.thread())
        )
        await run_until(world.clock, model.started.is_set)
        await run_until(world.clock, lambda: any("Par" in t for t in said(world)))
        await handle(world, edit("capital of Italy?", "100.2", "ev2"))
        await drive(world.clock, first)
        assert said(world) == [REPLACED, "Rome."]
        assert not model.release.is_set(), "the first run was stopped, not finished"
        assert await transcript(world) == [("user", "capital of Italy?"), ("assistant", "Rome.")]
    finally:
        model.release.set()
        await world.core.aclose()


async def test_an_edit_while_a_run_waits_for_approval_expires_the_card(tmp_path: Path) -> None:
    world = World(tmp_path)
    await world.core.start()
    try:
        world.model.steps = [step(call("deploy", {"target": "prod"})), text("Staging it is.")]
        await handle(world, question("deploy to prod", "100.2", "ev1"))
        card = world.cards()[0]
        await handle(world, edit("deploy to staging, not prod", "100.2", "ev2"))
        assert "Staging it is." in said(world)
        assert not world.thread().messages[card.id].buttons, "the card is no longer live"
        assert world.ran == []
        assert await transcript(world) == [
            ("user", "deploy to staging, not prod"),
            ("assistant", "Staging it is."),
        ]
    finally:
        await world.core.aclose()


async def test_an_edit_accepted_before_a_restart_is_applied_once_after_it(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    await world.core.start()
    try:
        world.model.steps = [text("Paris.")]
        await handle(world, question("capital of France?", "100.2", "ev1"))
        new = UserMessage(
            text="capital of Italy?",
            author_id=ALICE.id,
            author_name=ALICE.display_name,
            event_id="ev2",
            message_id="100.2",
            edit=True,
            addressed=False,
        )
        assert await world.core.deliveries.accept(ThreadKey(KEY), new)  # then the crash
        await world.restart()
        world.model.steps = [text("Rome.")]
        await drive(world.clock, world.core.recover())
        await drive(world.clock, world.core.wait_idle())
        assert said(world) == [REPLACED, "Rome."]
        await world.restart()
        await drive(world.clock, world.core.recover())
        await drive(world.clock, world.core.wait_idle())
        assert len(world.model.requests) == 2, "not run again"
        assert await transcript(world) == [("user", "capital of Italy?"), ("assistant", "Rome.")]
    finally:
        await world.core.aclose()
