"""A per-person MCP server's sign-in on Slack: the link goes to its person in an ephemeral note;
when ``chat.postEphemeral`` is refused, the thread gets a card without the link instead, whose
"Sign in…" answers each clicker privately: the person the sign-in is for gets the link, anyone
else a refusal without it. Through slack-bolt against the fake Slack; the OAuth and MCP servers
are faked as in :mod:`tests.bot.mcp.test_sign_in_threads`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.adapters.slack.conftest import slack_world
from tests.bot.mcp.test_sign_in_threads import follow, world
from tests.fakes.scripted_model import ScriptedModel, call, step, text
from tests.fakes.slack import MENTION, Message

SLACK_LINK = re.compile(r"(http://127\.0\.0\.1:\d+/authorize\?[^|>\s)]+)")


async def test_a_refused_ephemeral_note_gives_way_to_a_card_without_the_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO")
    model = ScriptedModel(
        [
            step(call("docs__sign_in", {})),
            step(call("docs__echo", {"text": "hi"})),
            text("Echoed for Ada."),
        ]
    )
    async with (
        world(tmp_path / "oauth") as w,
        slack_world(
            tmp_path,
            monkeypatch,
            model=model,
            mcp_servers={"docs": w.settings.mcp_servers["docs"].model_dump()},
        ) as slack,
    ):
        mcp = w.mcp
        fake = slack.fake
        fake.api.refuse_ephemerals = 1  # the sign-in's own note
        root = await fake.say("UADA", "CGENERAL", f"{MENTION} echo hi from docs")

        def cards() -> list[Message]:
            return [
                m
                for m in fake.replies(root.channel, root.ts)
                if any(b["text"]["text"] == "Sign in…" for b in m.buttons)
            ]

        await fake.wait_for(lambda: bool(cards()), within=20)
        [card] = cards()
        shown = card.shown
        await fake.click("UGRACE", card, "Sign in…")
        await fake.wait_for(lambda: bool(fake.ephemerals("UGRACE")))
        await fake.click("UADA", card, "Sign in…")
        await fake.wait_for(lambda: bool(fake.ephemerals("UADA")))
        [note] = fake.ephemerals("UADA")
        found = SLACK_LINK.search(note)
        assert found is not None, note
        link = found.group(1).replace("&amp;", "&")
        assert slack.runtime is not None
        await slack.runtime.mcp.sign_ins.arrived(await follow(link))
        await fake.wait_for(
            lambda: any("Echoed for Ada." in m.shown for m in fake.replies(root.channel, root.ts)),
            within=20,
        )
        await slack.idle()
        thread = "\n".join(m.shown for m in fake.replies(root.channel, root.ts))
        refused = fake.ephemerals("UGRACE")
        closed = next(m for m in fake.replies(root.channel, root.ts) if m.ts == card.ts)
    assert shown.startswith("Ada, docs needs you to sign in before this run can go on.")
    assert "for you alone" in note
    assert refused == ["Only Ada can sign in here: the link signs in whoever opens it, as Ada."]
    assert "signed in to docs." in closed.shown and not closed.buttons
    assert "/authorize?" not in thread, "the thread never shows the link"
    assert mcp.called_with == [("echo", "token-1")]
    assert link not in caplog.text and "/authorize?" not in caplog.text
