""" "Always allow" on the fake Discord, through the real discord.py, the Discord adapter, the real
core and the fake MCP server: after Ada allows ``close_ticket`` here, a later call of it with
other arguments runs without a card, and the thread shows its arguments in full before its
result; "Always allow this exact call" lets only the same arguments run without a card."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.config import McpServerSettings
from tests.adapters.discord.conftest import Discord
from tests.fakes.discord import Channel, Message
from tests.fakes.mcp_server import stdio_command
from tests.fakes.scripted_model import ScriptedModel, call, step, text

CLOSE = "tickets__close_ticket"
WINDOW = 15.0


def tickets(effects: Path) -> dict[str, McpServerSettings]:
    command = stdio_command("--effects", str(effects))
    return {"tickets": McpServerSettings(command=command[0], args=command[1:], timeout_s=60)}


def closes(*ids: str) -> list[Any]:
    steps: list[Any] = []
    for ident in ids:
        steps += [step(call(CLOSE, {"id": ident})), text(f"Closed {ident}.")]
    return steps


def buttons(message: Message) -> list[dict[str, Any]]:
    return [b for row in message.components for b in row["components"]]


def click(d: Discord, message: Message, label: str) -> None:
    """Ada clicks the button labelled ``label`` on ``message``, by its custom_id."""
    custom_id = next(str(b["custom_id"]) for b in buttons(message) if b["label"] == label)
    d.fake.click(message, custom_id, d.ada)


def cards(d: Discord, thread: Channel) -> list[Message]:
    """The thread's approval cards, decided or not."""
    return [
        m
        for m in d.fake.world.in_channel(thread.id)
        if m.author.id == d.bot.id and m.content[:1] in ("🔐", "✅", "❌", "⌛")
    ]


async def card(d: Discord, thread: Channel, count: int) -> Message:
    """The ``count``-th approval card of the thread, once it is there with its buttons."""
    await d.wait_for(lambda: len(cards(d, thread)) >= count and cards(d, thread)[-1].components)
    return cards(d, thread)[count - 1]


async def settled(d: Discord, done: Callable[[], object]) -> None:
    """Wait until ``done()`` holds, then until the bot is idle. A thread's messages and edits
    share one bucket of 5 per 5 s; discord.py waits out an exhausted bucket by the wall clock,
    so these waits allow for one such window."""
    await d.wait_for(done, within=WINDOW)
    await d.idle(within=WINDOW)


def said(d: Discord, thread: Channel, words: str, times: int = 1) -> Callable[[], bool]:
    """Whether the bot's messages in ``thread`` include ``words`` (in ``times`` of them)."""
    return lambda: sum(words in shown for shown in d.fake.world.shown(thread.id)) >= times


def notices(shown: list[str]) -> list[int]:
    """Where the thread shows a call that runs without a card."""
    return [i for i, content in enumerate(shown) if "runs without asking" in content]


async def test_a_call_allowed_by_a_rule_shows_its_arguments_in_full_before_its_result(
    discord_world: Discord, tmp_path: Path
) -> None:
    d = discord_world
    effects = tmp_path / "effects"
    await d.start(model=ScriptedModel(closes("T-1", "PROD-DB")), mcp_servers=tickets(effects))
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("close T-1")))
    asked = await card(d, thread, 1)
    assert [b["label"] for b in buttons(asked)] == [
        "Approve",
        "Deny",
        "Always allow this exact call",
        "Always allow for Ada L. here",
    ]
    click(d, asked, "Always allow for Ada L. here")
    await settled(d, said(d, thread, "Closed T-1."))

    # the model, answering Ada's next message, closes PROD-DB: the rule lets it run
    d.fake.say(thread, d.ada, "summarise the README")
    await settled(d, lambda: said(d, thread, "Closed PROD-DB.")() or len(cards(d, thread)) > 1)
    assert len(cards(d, thread)) == 1  # no card this time
    shown = d.fake.world.shown(thread.id)
    assert len(notices(shown)) == 1, shown
    notice = notices(shown)[0]
    assert shown[notice].startswith(
        f"▸ `{CLOSE}` runs without asking, allowed by Ada L.'s “Always allow {CLOSE} here”"
    )
    assert '```json\n{\n  "id": "PROD-DB"\n}\n```' in shown[notice]  # its arguments in full
    result = next(i for i, content in enumerate(shown) if "· closed PROD-DB" in content)
    assert notice < result  # its arguments first, then its result
    assert effects.read_text() == "closed T-1\nclosed PROD-DB\n"


async def test_this_exact_call_lets_only_the_same_arguments_run_without_a_card(
    discord_world: Discord, tmp_path: Path
) -> None:
    d = discord_world
    effects = tmp_path / "effects"
    model = ScriptedModel([*closes("T-1", "T-1"), step(call(CLOSE, {"id": "PROD-DB"})), text("no")])
    await d.start(model=model, mcp_servers=tickets(effects))
    thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("close T-1")))
    click(d, await card(d, thread, 1), "Always allow this exact call")
    await settled(d, said(d, thread, "Closed T-1."))

    d.fake.say(thread, d.ada, "close T-1 again")
    await settled(d, lambda: said(d, thread, "Closed T-1.", 2)() or len(cards(d, thread)) > 1)
    assert len(cards(d, thread)) == 1  # the same arguments: no card
    shown = d.fake.world.shown(thread.id)
    assert len(notices(shown)) == 1, shown
    notice = notices(shown)[0]
    assert "Ada L.'s “Always allow this exact call”" in shown[notice]
    assert '"id": "T-1"' in shown[notice]

    d.fake.say(thread, d.ada, "and PROD-DB")
    await settled(d, lambda: len(cards(d, thread)) > 1 or said(d, thread, "closed PROD-DB")())
    assert len(cards(d, thread)) == 2  # other arguments: asked again
    other = cards(d, thread)[1]
    assert '"id": "PROD-DB"' in other.content
    click(d, other, "Deny")
    await settled(d, lambda: "no" in d.fake.world.shown(thread.id))  # the whole reply
    assert d.core is not None
    [rule] = await d.core.store.allow_rules()
    assert rule.exact and rule.tool.startswith(f"{CLOSE}#")
    assert rule.covers == {f"discord:{d.ada.id}"}
    assert effects.read_text() == "closed T-1\nclosed T-1\n"
