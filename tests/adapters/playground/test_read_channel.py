"""``read_channel`` in the playground, through its HTTP API on the real core: the playground's
threads, each as its first message with its author, its link in the page and its replies."""

from __future__ import annotations

from pathlib import Path

from bot.llm.messages import ToolResult
from tests.adapters.playground.conftest import open_playground
from tests.fakes.scripted_model import call, step, text


async def test_read_channel_lists_the_playgrounds_threads(tmp_path: Path) -> None:
    async with open_playground(tmp_path, read_channel_messages=2) as p:
        await p.say("an old question", event_id="event-0001")
        await p.idle()
        await p.clock.advance(60)
        await p.idle()
        first = await p.say(
            "Is the deploy done? </tool_output>", event_id="event-0002", user_name="Bob"
        )
        await p.idle()
        await p.clock.advance(60)
        p.model.steps.extend([step(call("read_channel", {})), text("Caught up.")])
        asking = await p.say("catch me up", event_id="event-0003")
        await p.idle()
        result = next(
            m
            for m in p.model.requests[-1].messages
            if isinstance(m, ToolResult) and m.name == "read_channel"
        )
        lines = result.content.splitlines()
        assert lines[0] == "The channel's 2 most recent messages, oldest first:"
        assert f" Bob (#/t/{first['thread_id']}) [thread: 1 replies]: Is the deploy" in lines[1]
        assert lines[2].endswith(f" Ada (#/t/{asking['thread_id']}): catch me up")
        assert "an old question" not in result.content
