"""Buttons that survive a restart, the todo panel and its pin, and the slash commands."""

from __future__ import annotations

from bot.api.commands import RESET_DONE
from tests.adapters.discord.conftest import Discord, PuppetModel
from tests.fakes.discord import Message
from tests.fakes.discord.rest import EPHEMERAL
from tests.fakes.scripted_model import ScriptedModel, call, step, text

OPEN = {
    "todos": [
        {"content": "read the logs", "status": "in_progress"},
        {"content": "write the fix", "status": "pending"},
    ]
}
NEXT = {
    "todos": [
        {"content": "read the logs", "status": "completed"},
        {"content": "write the fix", "status": "in_progress"},
    ]
}
DONE = {
    "todos": [
        {"content": "read the logs", "status": "completed"},
        {"content": "write the fix", "status": "completed"},
    ]
}


def buttons(message: Message) -> list[dict[str, object]]:
    return [c for row in message.components for c in row["components"]]


def cards(d: Discord, channel_id: int) -> list[Message]:
    return [
        m
        for m in d.fake.world.in_channel(channel_id)
        if m.author.id == d.bot.id and any(b["label"] == "Approve" for b in buttons(m))
    ]


async def test_an_approval_click_after_a_restart_reaches_the_core(discord_world: Discord) -> None:
    d = discord_world
    first = ScriptedModel([step(call("run_command", {"command": "echo approved-and-ran"}))])
    await d.start(model=first)
    thread = d.fake.world.add_thread(d.channel, "ops", d.ada)
    d.fake.say(thread, d.ada, d.mention("run the echo"))
    await d.wait_for(lambda: cards(d, thread.id))
    await d.idle()
    card = cards(d, thread.id)[0]
    assert "echo approved-and-ran" in card.content
    assert all(str(b["custom_id"]).startswith("tl:") for b in buttons(card))

    second = ScriptedModel([text("The command printed its line.")])
    await d.start(model=second)  # a new client and a new core on the same data directory
    approve = next(str(b["custom_id"]) for b in buttons(card) if b["label"] == "Approve")

    refused = d.fake.click(card, approve, d.bob)  # not his to approve
    await d.wait_for(lambda: refused.followups)
    assert refused.callbacks == [{"type": 6}]
    assert refused.followups[0]["flags"] == EPHEMERAL and refused.followups[0]["content"]

    clicked = d.fake.click(card, approve, d.ada)
    await d.wait_for(
        lambda: any(
            m.content == "The command printed its line." for m in d.fake.world.in_channel(thread.id)
        )
    )
    assert clicked.callbacks == [{"type": 6}]  # acknowledged within Discord's 3 s
    await d.idle()
    assert "Ada" in card.content and not card.components  # decided, and by whom
    results = [m for r in second.requests for m in r.messages if m.role == "tool"]
    assert any("approved-and-ran" in m.content for m in results)


async def test_the_todo_panel_is_pinned_while_open_and_unpinned_when_done(running: Discord) -> None:
    d = running
    d.model.steps.extend(
        [
            step(call("todo_write", OPEN)),
            text("Working on it."),
            step(call("todo_write", DONE)),
            text("All done."),
        ]
    )
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("fix the bug")))
    panel = "**Plan** · 0/2 done\n▶ read the logs\n☐ write the fix"
    await d.shows(thread, [panel, "Working on it."])
    assert [m.content for m in d.fake.world.pinned(thread.id)] == [panel]

    d.fake.say(thread, d.ada, "finish it")
    done = "**Plan** · 2/2 done\n✅ read the logs\n✅ write the fix"
    await d.shows(thread, [done, "Working on it.", "All done."])
    assert d.fake.world.pinned(thread.id) == []


async def test_a_panel_discord_no_longer_lets_us_edit_is_posted_and_pinned_anew(
    running: Discord,
) -> None:
    d = running
    world = d.fake.world
    d.model.steps.extend(
        [
            step(call("todo_write", OPEN)),
            text("Started."),
            step(call("todo_write", NEXT)),
            text("Next."),
        ]
    )
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("plan it")))
    first = "**Plan** · 0/2 done\n▶ read the logs\n☐ write the fix"
    await d.shows(thread, [first, "Started."])
    old_panel = world.pinned(thread.id)[0]
    old_panel.created_at -= 3700  # Discord refuses further edits (30046)

    d.fake.say(thread, d.ada, "go on")
    second = "**Plan** · 1/2 done\n✅ read the logs\n▶ write the fix"
    await d.wait_for(
        lambda: sorted(world.shown(thread.id)) == sorted(["Started.", second, "Next."])
    )
    await d.idle()
    assert old_panel.deleted
    assert [m.content for m in world.pinned(thread.id)] == [second]


async def test_a_full_pin_list_makes_room_by_unpinning_our_oldest_pin(running: Discord) -> None:
    d = running
    world = d.fake.world
    thread = world.add_thread(d.channel, "pins", d.ada)
    ours = world.create_message(thread.id, world.bot, "an old panel of ours")
    theirs = world.create_message(thread.id, d.ada, "Ada's pinned note")
    world.pin(thread.id, ours.id)
    world.pin(thread.id, theirs.id)
    world.channels[thread.id].pin_limit = 2
    d.model.steps.extend([step(call("todo_write", OPEN)), text("On it.")])

    d.fake.say(thread, d.ada, d.mention("plan it"))
    panel = "**Plan** · 0/2 done\n▶ read the logs\n☐ write the fix"
    await d.shows(thread, ["an old panel of ours", panel, "On it."])
    assert [m.content for m in world.pinned(thread.id)] == ["Ada's pinned note", panel]
    assert any(c.status == 400 for c in d.fake.requests("PUT", thread.id))  # the 30003


async def test_slash_commands_status_reset_and_stop(running: Discord) -> None:
    d = running
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("remember 42")))
    await d.shows(thread, ["Ada L. said: remember 42"])
    assert d.fake.world.command_syncs == 1
    assert d.fake.world.commands[0]["name"] == "threadline"

    status = d.fake.slash(thread, d.ada, "threadline", "status")
    await d.wait_for(lambda: status.followups)
    assert status.callbacks == [{"type": 5, "data": {"flags": EPHEMERAL}}]
    assert status.followups[0]["flags"] == EPHEMERAL
    assert "Model: scripted model" in status.followups[0]["content"]
    assert "Messages: 2" in status.followups[0]["content"]

    reset = d.fake.slash(thread, d.bob, "threadline", "reset")
    await d.wait_for(lambda: reset.followups)
    assert reset.followups[0]["content"] == RESET_DONE
    again = d.fake.slash(thread, d.ada, "threadline", "status")
    await d.wait_for(lambda: again.followups)
    assert "No conversation in this thread yet" in again.followups[0]["content"]

    stop = d.fake.slash(thread, d.ada, "threadline", "stop")
    await d.wait_for(lambda: stop.followups)
    assert stop.followups[0]["content"] == "Nothing is running in this thread."


async def test_stop_ends_a_running_reply(discord_world: Discord) -> None:
    d = discord_world
    puppet = PuppetModel()
    await d.start(model=puppet)
    thread = d.fake.world.add_thread(d.channel, "long", d.ada)
    d.fake.say(thread, d.ada, d.mention("talk for a while"))
    puppet.say("Let me think about this at length")
    await d.wait_for(lambda: d.fake.world.shown(thread.id))

    stop = d.fake.slash(thread, d.bob, "threadline", "stop")
    await d.wait_for(lambda: stop.followups)
    assert stop.followups[0]["content"] == "Stopping the run in this thread."
    await d.wait_for(lambda: "Stopped by Bob" in "".join(d.fake.world.shown(thread.id)))


async def test_commands_are_registered_again_only_when_they_change(discord_world: Discord) -> None:
    d = discord_world
    await d.start()
    await d.start()  # a restart with the same commands
    assert d.fake.world.command_syncs == 1
    (d.data_dir / "discord-commands.json").write_text("{}")
    await d.start()
    assert d.fake.world.command_syncs == 2
