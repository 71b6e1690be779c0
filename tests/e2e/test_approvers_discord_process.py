"""The real ``threadline run`` on the fake Discord with approvers in threadline.toml: the card
names who can decide when the person who asked cannot, that person gets a direct message with a
jump link to the card, a request nobody decides escalates once to another person, who is told
and decides; and ``read_channel`` reads another channel only for someone who can see it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.infra.clock import SystemClock
from bot.llm.wire import from_data
from tests.adapters.discord.test_process import threadline
from tests.fakes.discord import Channel, FakeDiscord, Message
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply

WAIT = 30.0
VIEW = 1 << 10
HISTORY = 1 << 16
ADMINISTRATOR = 1 << 3


def buttons(message: Message) -> list[dict[str, Any]]:
    return [b for row in message.components for b in row["components"]]


async def test_approvers_are_told_and_an_undecided_request_escalates(tmp_path: Path) -> None:
    fake = FakeDiscord(SystemClock())
    await fake.start()
    try:
        world = fake.world
        guild = world.add_guild("Lab")
        channel = world.add_channel(guild, "general")
        ada = world.add_user("Ada", guild=guild)
        bob = world.add_user("Bob", guild=guild)
        carol = world.add_user("Carol", guild=guild)
        (tmp_path / "threadline.toml").write_text(
            '[tools.write_file]\napproval = "always"\n'
            f'approvers = {{ requester = false, users = ["discord:{bob.id}"], '
            f'escalate_to = ["discord:{carol.id}"], escalate_after = "4s" }}\n'
        )
        async with FakeOpenAI() as model:
            model.push(
                Reply(calls=[FakeCall("write_file", {"path": "note.txt", "content": "hi"})]),
                Reply("Written."),
            )
            extra = {
                "OPENAI_BASE_URL": model.base_url,
                "OPENAI_API_KEY": "sk-test",
                "THREADLINE_WORKSPACE_TOOLS": "true",
            }
            async with threadline(tmp_path, fake, extra):
                asked = fake.say(channel, ada, f"<@{world.bot.id}> write a note")
                await fake.wait_for(lambda: world.messages[asked.id].thread_id is not None, WAIT)
                thread = world.channels[asked.id]

                def card() -> Message | None:
                    return next(
                        (
                            m
                            for m in world.in_channel(thread.id)
                            if "`write_file`" in m.content and m.author.id == world.bot.id
                        ),
                        None,
                    )

                await fake.wait_for(lambda: card() is not None and buttons(card()), WAIT)  # type: ignore[arg-type]
                shown = card()
                assert shown is not None
                assert "Who can decide: Bob." in shown.content
                assert "Carol can decide too" in shown.content
                await fake.wait_for(lambda: bool(world.direct_messages(bob)), WAIT)
                told = world.direct_messages(bob)[0]
                assert "Ada asks Threadline to run `write_file` in #general" in told
                assert f"https://discord.com/channels/{guild.id}/{thread.id}/{shown.id}" in told

                await fake.wait_for(lambda: bool(world.direct_messages(carol)), WAIT)
                assert "Nobody has decided yet" in world.direct_messages(carol)[0]
                assert world.direct_messages(ada) == []
                await fake.wait_for(
                    lambda: "Nobody decided in time" in (card() or shown).content, WAIT
                )
                escalated = card()
                assert escalated is not None
                approve = next(b for b in buttons(escalated) if b["label"] == "Approve")
                fake.click(escalated, str(approve["custom_id"]), carol)
                await fake.wait_for(
                    lambda: any("Written." in s for s in world.shown(thread.id)), WAIT
                )
                assert "Approved** by Carol" in (card() or shown).content
                assert len(world.direct_messages(bob)) == 1
                assert len(world.direct_messages(carol)) == 1
    finally:
        await fake.close()


def hidden(channel: Channel, *seeing: int) -> None:
    """Nobody sees ``channel`` (its server's @everyone is denied) but the members ``seeing``."""
    assert channel.guild_id is not None
    channel.overwrites = [
        {"id": str(channel.guild_id), "type": 0, "allow": "0", "deny": str(VIEW)},
        *({"id": str(m), "type": 1, "allow": str(VIEW | HISTORY), "deny": "0"} for m in seeing),
    ]


async def test_read_channel_reads_another_channel_only_for_who_can_see_it(tmp_path: Path) -> None:
    fake = FakeDiscord(SystemClock())
    await fake.start()
    try:
        world = fake.world
        guild = world.add_guild("Lab")
        guild.everyone &= ~ADMINISTRATOR  # channel overwrites apply
        general = world.add_channel(guild, "general")
        ops = world.add_channel(guild, "ops")
        leads = world.add_channel(guild, "leads")
        attic = world.add_channel(guild, "attic")
        ada = world.add_user("Ada", guild=guild)
        bob = world.add_user("Bob", guild=guild)
        hidden(leads, world.bot.id, bob.id)
        hidden(attic, ada.id)
        fake.say(ops, bob, "Restarted the queue")
        fake.say(leads, bob, "Promotions are on Friday")
        async with FakeOpenAI() as model:
            model.push(
                Reply(
                    calls=[
                        FakeCall("read_channel", {"channel": "#ops"}),
                        FakeCall("read_channel", {"channel": f"<#{leads.id}>"}),
                        FakeCall("read_channel", {"channel": "attic"}),
                    ]
                ),
                Reply("Bob restarted the queue."),
            )
            extra = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test"}
            async with threadline(tmp_path, fake, extra):
                asked = fake.say(general, ada, f"<@{world.bot.id}> what happened in #ops?")
                await fake.wait_for(lambda: world.messages[asked.id].thread_id is not None, WAIT)
                thread = world.channels[asked.id]
                await fake.wait_for(
                    lambda: any("restarted the queue" in s for s in world.shown(thread.id)), WAIT
                )
        read = [from_data(m["content"]) for m in model.requests[1].messages if m["role"] == "tool"]
        from_ops, from_leads, from_attic = read
        assert "#ops's 1 most recent messages" in from_ops
        assert from_ops.rstrip().endswith(": Restarted the queue")
        assert f"https://discord.com/channels/{guild.id}/{ops.id}/" in from_ops
        assert "cannot see #leads" in from_leads and "Promotions" not in from_leads
        assert "Threadline cannot read #attic" in from_attic
    finally:
        await fake.close()
