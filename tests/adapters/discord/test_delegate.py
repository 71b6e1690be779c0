"""A sub-agent at work on the fake Discord, through the real discord.py client: the approval its
``write_file`` needs is a card in the thread that the person clicks, and the answer continues
below the card with no button left behind."""

from __future__ import annotations

from bot.config import ToolSettings
from bot.llm.messages import ToolResult
from bot.llm.model import ModelRequest
from tests.adapters.discord.conftest import Discord
from tests.adapters.discord.test_buttons_and_commands import buttons, cards
from tests.fakes.scripted_model import ScriptedModel, Step, call, step, text

TASK = {"task": "Write notes.txt saying hello.", "tools": ["write_file"]}


def respond(request: ModelRequest) -> Step:
    last = request.messages[-1]
    sub = request.system.startswith("You are a sub-agent")
    if sub and isinstance(last, ToolResult):
        return text("I wrote notes.txt.")
    if sub:
        return step(call("write_file", {"path": "notes.txt", "content": "hello"}))
    if isinstance(last, ToolResult):
        return text("Done: notes.txt says hello.")
    return step(call("delegate_task", TASK))


async def test_a_sub_agent_asks_with_a_card_and_answers_below_it(discord_world: Discord) -> None:
    d = discord_world
    await d.start(
        model=ScriptedModel([], respond=respond), tools={"write_file": ToolSettings(approval="ask")}
    )
    thread = d.fake.world.add_thread(d.channel, "notes", d.ada)
    d.fake.say(thread, d.ada, d.mention("leave a note"))
    await d.wait_for(lambda: cards(d, thread.id))
    card = cards(d, thread.id)[0]
    assert "write_file" in card.content and not list(d.data_dir.rglob("notes.txt"))
    approve = next(str(b["custom_id"]) for b in buttons(card) if b["label"] == "Approve")
    clicked = d.fake.click(card, approve, d.ada)
    await d.wait_for(
        lambda: any(
            m.content.endswith("Done: notes.txt says hello.")
            for m in d.fake.world.in_channel(thread.id)
        )
    )
    await d.idle()
    assert clicked.callbacks == [{"type": 6}]
    [notes] = d.data_dir.rglob("notes.txt")
    assert notes.read_text() == "hello"
    assert "Approved" in card.content and "▶ Ran" in card.content and not card.components
    mine = [m for m in d.fake.world.in_channel(thread.id) if m.author.id == d.bot.id]
    assert mine.index(card) < len(mine) - 1 and mine[-1].content.endswith(
        "Done: notes.txt says hello."
    )
    assert not [m for m in mine if m.components]  # no button left (Stop included)
