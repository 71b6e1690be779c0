""" "Always allow" on the fake Slack, through the real runtime, slack-bolt, slack_sdk and the fake
MCP server: after Ada allows ``close_ticket`` here, a call of it that a page the model read asked
for (other arguments) runs without a card, and the thread shows its arguments in full before
its result; "Always allow this exact call" lets only the same arguments run without a card."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.adapters.slack.conftest import World, slack_world
from tests.fakes.mcp_server import stdio_command
from tests.fakes.scripted_model import ScriptedModel, call, step, text
from tests.fakes.slack import MENTION, FakeSlack, Message

CLOSE = "tickets__close_ticket"
SCALE = 20
"""Slack's rate limit windows scaled down: each call a rule lets run adds a message."""


def tickets(effects: Path) -> dict[str, Any]:
    command = stdio_command("--effects", str(effects))
    return {"tickets": {"command": command[0], "args": command[1:], "timeout_s": 20}}


def closes(*ids: str) -> list[Any]:
    steps: list[Any] = []
    for ident in ids:
        steps += [step(call(CLOSE, {"id": ident})), text(f"Closed {ident}.")]
    return steps


async def card(world: World, root: Message, count: int) -> Message:
    """The ``count``-th approval card of the thread, once it is there."""

    await world.fake.wait_for(lambda: len(cards(world, root)) >= count)
    return cards(world, root)[count - 1]


def cards(world: World, root: Message) -> list[Message]:
    """The thread's approval cards, decided or not."""
    return [m for m in world.fake.replies(root.channel, root.ts) if m.shown[:1] in "🔐✅❌⌛"]


async def said(world: World, root: Message, words: str) -> None:
    await world.fake.wait_for(
        lambda: any(words in m.shown for m in world.fake.replies(root.channel, root.ts))
    )
    await world.idle()


def first(messages: list[Message], words: str) -> int:
    return next(i for i, m in enumerate(messages) if words in m.shown)


async def test_a_call_allowed_by_a_rule_shows_its_arguments_in_full_before_its_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    effects = tmp_path / "effects"
    model = ScriptedModel(closes("T-1", "PROD-DB"))
    async with slack_world(
        tmp_path,
        monkeypatch,
        model=model,
        fake=FakeSlack(time_scale=SCALE),
        mcp_servers=tickets(effects),
    ) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} close T-1")
        asked = await card(world, root, 1)
        labels = [b["text"]["text"] for b in asked.buttons]
        assert labels == [
            "Approve",
            "Deny",
            "Always allow this exact call",
            "Always allow for Ada here",
        ]
        assert (await world.fake.click("UADA", asked, "Always allow for Ada here")).acked_in_time
        await said(world, root, "Closed T-1.")

        # the README the model reads next tells it to close PROD-DB: the rule lets it run
        await world.fake.say("UADA", "CGENERAL", "summarise the README", thread_ts=root.ts)
        await said(world, root, "Closed PROD-DB.")
        thread = world.fake.replies(root.channel, root.ts)
        shown = first(thread, '"id": "PROD-DB"')
        assert "runs without asking" in thread[shown].shown
        assert "Ada's “Always allow tickets__close_ticket here”" in thread[shown].shown
        assert shown < first(thread, "closed PROD-DB")  # its arguments first, then its result
        assert len(cards(world, root)) == 1
    assert effects.read_text() == "closed T-1\nclosed PROD-DB\n"


async def test_this_exact_call_lets_only_the_same_arguments_run_without_a_card(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    effects = tmp_path / "effects"
    model = ScriptedModel([*closes("T-1", "T-1"), step(call(CLOSE, {"id": "PROD-DB"})), text("no")])
    async with slack_world(
        tmp_path,
        monkeypatch,
        model=model,
        fake=FakeSlack(time_scale=SCALE),
        mcp_servers=tickets(effects),
    ) as world:
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} close T-1")
        asked = await card(world, root, 1)
        assert (await world.fake.click("UADA", asked, "Always allow this exact call")).acked_in_time
        await said(world, root, "Closed T-1.")
        await world.fake.say("UADA", "CGENERAL", "close T-1 again", thread_ts=root.ts)
        await world.fake.wait_for(lambda: effects.read_text().count("closed T-1") == 2)
        await world.idle()
        thread = world.fake.replies(root.channel, root.ts)
        notice = thread[first(thread, "runs without asking")].shown
        assert "Ada's “Always allow this exact call”" in notice and '"id": "T-1"' in notice

        await world.fake.say("UADA", "CGENERAL", "and PROD-DB", thread_ts=root.ts)
        other = await card(world, root, 2)  # other arguments: asked again
        assert '"id": "PROD-DB"' in other.shown
        assert (await world.fake.click("UADA", other, "Deny")).acked_in_time
        await said(world, root, "no")
        assert world.runtime is not None
        [rule] = await world.runtime.core.store.allow_rules()
        assert rule.exact and rule.tool.startswith(f"{CLOSE}#") and rule.covers == {"slack:UADA"}
    assert effects.read_text() == "closed T-1\nclosed T-1\n"
