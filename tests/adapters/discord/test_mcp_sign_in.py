"""A per-person MCP server's sign-in on Discord, which has no private note to post: the thread
shows a card without the link, whose "Sign in…" answers each clicker privately (an ephemeral
follow-up): the person the sign-in is for gets the link, anyone else a refusal without it.
Signing in through the link resumes the call, and the card then says so, without its button.
Through discord.py against the fake Discord; the OAuth and MCP servers are faked as in
:mod:`tests.bot.mcp.test_sign_in_threads`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.config import McpServerSettings
from tests.adapters.discord.conftest import Discord
from tests.bot.mcp.test_sign_in_threads import LINK, follow, world
from tests.fakes.discord import Message
from tests.fakes.discord.rest import EPHEMERAL
from tests.fakes.scripted_model import ScriptedModel, call, step, text

WINDOW = 15.0


def buttons(message: Message) -> list[dict[str, Any]]:
    return [b for row in message.components for b in row["components"]]


async def test_the_sign_in_link_goes_to_its_person_alone(
    discord_world: Discord, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO")
    d = discord_world
    async with world(tmp_path / "oauth") as w:
        mcp, oauth_settings = w.mcp, w.settings
        docs = oauth_settings.mcp_servers["docs"]
        model = ScriptedModel(
            [
                step(call("docs__sign_in", {})),
                step(call("docs__echo", {"text": "hi"})),
                text("Echoed for Ada."),
            ]
        )
        await d.start(model=model, mcp_servers={"docs": McpServerSettings.model_validate(docs)})
        thread = await d.thread_of(d.fake.say(d.channel, d.ada, d.mention("echo hi from docs")))

        def cards() -> list[Message]:
            return [
                m for m in d.fake.world.in_channel(thread.id) if "needs you to sign in" in m.content
            ]

        await d.wait_for(lambda: bool(cards()), within=WINDOW)
        [card] = cards()
        assert card.content.startswith("Ada L., docs needs you to sign in")
        [button] = buttons(card)
        assert button["label"] == "Sign in…"

        bob = d.fake.click(card, str(button["custom_id"]), d.bob)
        await d.wait_for(lambda: bob.followups, within=WINDOW)
        [refused] = bob.followups
        ada = d.fake.click(card, str(button["custom_id"]), d.ada)
        await d.wait_for(lambda: ada.followups, within=WINDOW)
        [note] = ada.followups
        found = LINK.search(note["content"])
        assert found is not None, note
        link = found.group(1)

        assert d.mcp is not None
        await d.mcp.sign_ins.arrived(await follow(link))
        await d.wait_for(
            lambda: any("Echoed for Ada." in s for s in d.fake.world.shown(thread.id)), WINDOW
        )
        await d.wait_for(lambda: not buttons(d.fake.world.messages[card.id]), WINDOW)
        await d.idle()
        shown = d.fake.world.shown(thread.id)
        closed = d.fake.world.messages[card.id].content
    assert note["flags"] == EPHEMERAL and note["content"].endswith("this link is for you alone")
    assert refused["flags"] == EPHEMERAL
    assert refused["content"] == (
        "Only Ada L. can sign in here: the link signs in whoever opens it, as Ada L.."
    )
    assert closed == "Ada L. signed in to docs."
    assert mcp.called_with == [("echo", "token-1")]
    # the link shows to nobody else: not in the thread, not in the log
    assert not any("/authorize?" in s for s in shown), shown
    assert "/authorize?" not in card.content
    assert link not in caplog.text and "/authorize?" not in caplog.text
