"""``/threadline schedules`` and ``/threadline memory`` through the real discord.py against the
fake Discord: the thread's list, and one cancelled or forgotten by id, answered privately."""

from __future__ import annotations

from bot.api.inbound import Author
from tests.adapters.discord.conftest import Discord
from tests.fakes.discord.rest import EPHEMERAL
from tests.fakes.scripted_model import call, step, text


async def test_schedules_are_listed_and_cancelled_by_id(running: Discord) -> None:
    d = running
    d.model.steps.extend(
        [
            step(
                call("schedule_prompt", {"prompt": "Post the standup notes", "when": "0 9 * * 1-5"})
            ),
            text("Every weekday at nine."),
        ]
    )
    thread = await d.thread_of(
        d.fake.say(d.channel, d.ada, d.mention("post the standup notes every weekday"))
    )
    await d.wait_for(
        lambda: (
            d.fake.world.shown(thread.id)[-1:] != []
            and d.fake.world.shown(thread.id)[-1].endswith("Every weekday at nine.")
        )
    )
    [shown] = d.fake.world.shown(thread.id)
    assert shown.startswith(
        "▸ `schedule_prompt` · Scheduled s1: next run"
    )  # what the call did, in a line
    assert {c["name"] for c in d.fake.world.commands[0]["options"]} >= {"schedules", "memory"}

    listed = d.fake.slash(thread, d.bob, "threadline", "schedules")
    await d.wait_for(lambda: listed.followups)
    assert listed.followups[0]["flags"] == EPHEMERAL
    shown = listed.followups[0]["content"]
    assert "Scheduled prompts in this thread (1 of at most 10)" in shown
    assert (
        "s1: next" in shown
        and "cron `0 9 * * 1-5` (UTC), by Ada L.: Post the standup notes" in shown
    )

    wrong = d.fake.slash(thread, d.bob, "threadline", "schedules", cancel="s7")
    await d.wait_for(lambda: wrong.followups)
    assert (
        wrong.followups[0]["content"]
        == "Nothing changed: this thread has no schedule 's7'; its schedules: s1."
    )

    cancel = d.fake.slash(thread, d.bob, "threadline", "schedules", cancel="s1")
    await d.wait_for(lambda: cancel.followups)
    assert cancel.followups[0]["content"].startswith("Cancelled s1: next")
    assert (
        d.core is not None
        and await d.core.schedules.of_thread(f"discord:{d.guild.id}:{thread.id}") == []
    )
    again = d.fake.slash(thread, d.bob, "threadline", "schedules")
    await d.wait_for(lambda: again.followups)
    assert again.followups[0]["content"].startswith("No scheduled prompts in this thread.")


async def test_memories_are_listed_and_forgotten_by_id(running: Discord) -> None:
    d = running
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("hello")))
    await d.shows(thread, ["Ada L. said: hello"])
    empty = d.fake.slash(thread, d.ada, "threadline", "memory")
    await d.wait_for(lambda: empty.followups)
    assert empty.followups[0]["content"] == "No memories in this thread or its channel yet."

    assert d.core is not None
    key = f"discord:{d.guild.id}:{thread.id}"
    await d.core.memory.remember(
        key, Author("discord:1", "Ada L."), "The office closes at six", "channel"
    )
    listed = d.fake.slash(thread, d.bob, "threadline", "memory")
    await d.wait_for(lambda: listed.followups)
    assert listed.followups[0]["content"].splitlines() == [
        "Memories of this thread and its channel:",
        "- m1 (channel, Ada L., "
        + listed.followups[0]["content"].split("Ada L., ")[1][:10]
        + "): The office closes at six",
    ]
    forget = d.fake.slash(thread, d.bob, "threadline", "memory", forget="m1")
    await d.wait_for(lambda: forget.followups)
    assert forget.followups[0]["content"] == "Forgot m1: The office closes at six"
    assert await d.core.memory.recent(key, 10) == []
    again = d.fake.slash(thread, d.bob, "threadline", "memory", forget="m1")
    await d.wait_for(lambda: again.followups)
    assert again.followups[0]["content"].startswith("Nothing changed: there is no memory 'm1' here")
