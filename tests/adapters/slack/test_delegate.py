"""A sub-agent at work on the fake Slack, through the real runtime, slack-bolt and slack_sdk: its
progress shows in the reply (within the edit budget), the approval its ``write_file`` needs is a
card in the thread that the person clicks, and the answer continues below the card."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.llm.messages import ToolResult
from bot.llm.model import ModelRequest
from tests.adapters.slack.conftest import slack_world
from tests.fakes.scripted_model import ScriptedModel, Step, call, step, text
from tests.fakes.slack import MENTION

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


async def test_a_sub_agent_asks_with_a_card_and_answers_below_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel([], respond=respond)
    tools = {"write_file": {"approval": "ask"}}
    async with slack_world(tmp_path, monkeypatch, model=model, tools=tools) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} leave a note")
        await world.fake.wait_for(
            lambda: any(
                m.buttons and "write_file" in m.shown
                for m in world.fake.replies(root.channel, root.ts)
            )
        )
        card = next(
            m
            for m in world.fake.replies(root.channel, root.ts)
            if m.buttons and "write_file" in m.shown
        )
        assert "Approval needed" in card.shown and not list((tmp_path / "data").rglob("notes.txt"))
        assert (await world.fake.click("UADA", card, "Approve")).acked_in_time
        await world.fake.wait_for(
            lambda: (
                "Done: notes.txt says hello." in world.fake.replies(root.channel, root.ts)[-1].shown
            )
        )
        await world.idle()
        replies = world.fake.replies(root.channel, root.ts)
    [notes] = (tmp_path / "data").rglob("notes.txt")
    assert notes.read_text() == "hello"
    card = next(m for m in replies if m.ts == card.ts)
    assert "Approved" in card.shown and "▶ Ran" in card.shown and not card.buttons
    assert replies.index(card) < len(replies) - 1  # the answer is below the card
    assert not [m for m in replies if m.buttons]  # no button left (Stop included)
    assert not [c for c in world.fake.api.calls if c.outcome == "ratelimited"]  # within the budget
