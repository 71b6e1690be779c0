"""Which messages of a thread the core answers (``thread_replies``, the thread's quiet flag):
a message that does not mention the bot, in a thread that answers mentions only, is kept with
its author and read with the next answered message — also while a run waits for an approval,
and when it was accepted just before a restart."""

from __future__ import annotations

from pathlib import Path

from bot.api.inbound import Inbound, ThreadKey
from bot.llm.messages import UserMessage
from tests.bot.world import ALICE, BOB, KEY, World
from tests.fakes.scripted_model import call, step, text
from tests.fakes.surface import drive

MENTIONS = {"channels": {"slack:T1:C1": {"thread_replies": "mentions"}}}


async def aside(world: World, words: str, event_id: str) -> None:
    """Bob writes in the thread without mentioning the bot."""
    inbound = Inbound(ThreadKey(KEY), BOB, words, event_id, addressed=False)
    await drive(world.clock, world.core.handle(inbound, world.thread()))


async def test_a_message_kept_while_a_run_waits_for_approval_reaches_the_resumed_run(
    tmp_path: Path,
) -> None:
    world = World(tmp_path, **MENTIONS)
    await world.core.start()
    try:
        world.model.steps = [step(call("deploy", {"target": "prod"})), text("Deployed.")]
        await world.say("ship it")
        assert len(world.cards()) == 1
        await aside(world, "prod is frozen today", "aside1")
        assert len(world.model.requests) == 1  # not answered: the run still waits
        assert await world.click("Approve", ALICE) == "Approved."
        assert world.ran == ["prod"]
        seen = [m for m in world.model.requests[-1].messages if isinstance(m, UserMessage)]
        assert [(m.author_name, m.text) for m in seen] == [
            ("Alice", "ship it"),
            ("Bob", "prod is frozen today"),
        ]
    finally:
        await world.core.aclose()


async def test_a_kept_message_accepted_before_a_restart_is_kept_not_answered(
    tmp_path: Path,
) -> None:
    world = World(tmp_path, **MENTIONS)
    await world.core.start()
    try:
        world.model.steps = [text("Hello."), text("Bob said so.")]
        await world.say("hi")
        kept = UserMessage(
            text="just between us", author_name="Bob", event_id="late1", addressed=False
        )
        assert await world.core.deliveries.accept(ThreadKey(KEY), kept)  # then the crash
        await world.restart()
        await drive(world.clock, world.core.recover())
        await drive(world.clock, world.core.wait_idle())
        assert len(world.model.requests) == 1
        assert [m.text for m in await world.asked()] == ["hi", "just between us"]
        await world.say("what did Bob say?")
        assert len(world.model.requests) == 2
    finally:
        await world.core.aclose()


async def test_a_message_without_a_mention_in_a_thread_the_bot_is_not_in_is_dropped(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    await world.core.start()
    try:
        await aside(world, "people talking", "p1")
        assert not await world.core.has_session(ThreadKey(KEY))
        assert world.model.requests == []
    finally:
        await world.core.aclose()
