"""Slack's AI app surfaces through the real runtime, slack-bolt and slack_sdk on the fake Slack:
an assistant thread gets suggested prompts when it starts and a title from its first question,
and is answered like any thread; the Home tab shows the tools, the person's recent threads and
the approvals waiting for them. Without the scope or the app setting, each is refused once,
said once in the log, and off; answers are unchanged."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal

import pytest
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from adapters.slack.assistant import PROMPTS_TITLE
from adapters.slack.doctor import check_slack
from tests.adapters.slack.conftest import World, slack_world
from tests.fakes.scripted_model import ScriptedModel, call, step, text
from tests.fakes.slack import MENTION, FakeSlack, Message
from tests.fakes.slack.server import ALL_SCOPES

Mode = Literal["socket", "http"]
MODES = pytest.mark.parametrize("mode", ["socket", "http"])


def shown(view: dict[str, Any]) -> str:
    """Everything a Home view says, as text (checked against Slack's Block Kit models first)."""
    blocks = Block.parse_all(view["blocks"])
    for block in blocks:
        block.validate_json()
    View(type="home", blocks=blocks).validate_json()
    return "\n".join(
        str(b.get("text", {}).get("text", "")) for b in view["blocks"] if b["type"] != "divider"
    )


async def answered(world: World, root: Message, count: int = 1) -> list[Message]:
    return await world.answered(root, count)


@MODES
async def test_an_assistant_thread_gets_prompts_a_title_and_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: Mode
) -> None:
    async with slack_world(tmp_path, monkeypatch, mode=mode) as world:
        fake = world.fake
        root = await fake.start_assistant_thread("UADA", context_channel="CGENERAL")
        thread = fake.assistant_thread(root)
        await fake.wait_for(lambda: bool(thread.prompts))
        assert thread.prompts_title == PROMPTS_TITLE
        assert [p["title"] for p in thread.prompts] == [
            "What can you do?",
            "Run a little script",
            "Schedule a reminder",
            "Remember a preference",
        ]

        question = "Why   did the nightly deploy fail on the staging cluster after the upgrade?"
        await fake.say("UADA", root.channel, question, thread_ts=root.ts)
        (reply,) = await answered(world, root)
        assert reply.shown.startswith("Ada said: Why")
        await fake.wait_for(lambda: thread.title is not None)
        assert thread.title == "Why did the nightly deploy fail on the staging cluster…"

        await fake.say("UADA", root.channel, "and now?", thread_ts=root.ts)
        await answered(world, root, 2)
        assert fake.count("assistant.threads.setTitle") == 1  # the first question only


async def test_configured_prompts_are_offered_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompts = ["Summarise the incident channel", "Draft the weekly update"]
    async with slack_world(tmp_path, monkeypatch, slack_suggested_prompts=prompts) as world:
        root = await world.fake.start_assistant_thread("UADA")
        thread = world.fake.assistant_thread(root)
        await world.fake.wait_for(lambda: bool(thread.prompts))
        assert thread.prompts == [{"title": p, "message": p} for p in prompts]


async def test_a_direct_message_thread_that_is_not_an_assistant_thread_is_answered_untitled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with slack_world(tmp_path, monkeypatch) as world:
        fake = world.fake
        root = await fake.say("UADA", "DADA", "first")
        await answered(world, root)
        await fake.say("UADA", "DADA", "a reply", thread_ts=root.ts)
        await answered(world, root, 2)
        other = await fake.say("UGRACE", "CGENERAL", "hello")
        await fake.say("UADA", "CGENERAL", f"{MENTION} in a channel", thread_ts=other.ts)
        await answered(world, other)
        await fake.start_assistant_thread("UADA")
        await fake.wait_for(lambda: fake.count("assistant.threads.setSuggestedPrompts") == 1)
        await world.idle()
        calls = [c.outcome for c in fake.api.calls if c.method == "assistant.threads.setTitle"]
        assert calls == []  # replies in an existing session and channel threads are not titled


@MODES
async def test_the_home_tab_shows_tools_threads_and_approvals_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: Mode
) -> None:
    model = ScriptedModel([text("Hello there."), step(call("run_command", {"command": "df -h"}))])
    async with slack_world(tmp_path, monkeypatch, mode=mode, model=model) as world:
        fake = world.fake
        hello = await fake.say("UADA", "CGENERAL", f"{MENTION} say hello <to> me & the team")
        await answered(world, hello)
        disk = await fake.say("UADA", "DADA", "how full is the disk?")
        await fake.wait_for(lambda: any("🔐" in m.shown for m in fake.replies("DADA", disk.ts)))
        card = next(m for m in fake.replies("DADA", disk.ts) if "🔐" in m.shown)
        await world.idle()

        await fake.open_home("UADA")
        await fake.wait_for(lambda: bool(fake.home_views("UADA")))
        said = shown(fake.home_views("UADA")[-1])
        assert "`run_command` — Run a shell command" in said and "`remember`" in said
        base = "https://fake.slack.invalid/archives"
        assert (
            f"<{base}/DADA/p{disk.ts.replace('.', '')}|how full is the disk?>"
            " — our direct messages" in said
        )
        assert (
            f"<{base}/CGENERAL/p{hello.ts.replace('.', '')}|say hello &lt;to&gt; me &amp; the"
            " team> — <#CGENERAL>" in said
        )
        assert said.index("how full") < said.index("say hello")  # the latest first
        assert (
            f"`run_command` for Ada in our direct messages — <{base}/DADA/"
            f"p{card.ts.replace('.', '')}?thread_ts={disk.ts}&cid=DADA|open the card>" in said
        )

        await fake.open_home("UGRACE")
        await fake.open_home("UGRACE", tab="messages")  # not the Home tab: nothing to publish
        await fake.wait_for(lambda: bool(fake.home_views("UGRACE")))
        await world.idle()
        grace = fake.home_views("UGRACE")
        assert len(grace) == 1
        assert "None yet" in shown(grace[0]) and "Nothing is waiting" in shown(grace[0])


async def test_without_the_scope_or_the_home_tab_each_is_refused_once_and_answers_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    fake = FakeSlack(scopes=ALL_SCOPES - {"assistant:write"})
    fake.api.home_tab = False
    async with slack_world(tmp_path, monkeypatch, fake=fake) as world:
        for n in range(2):
            root = await fake.start_assistant_thread("UADA")
            await fake.say("UADA", root.channel, f"question {n}", thread_ts=root.ts)
            (reply,) = await answered(world, root)
            assert reply.shown == f"Ada said: question {n}"
            await fake.open_home("UADA")
            await world.idle()
        assert fake.count("assistant.threads.setSuggestedPrompts") == 1
        assert fake.count("assistant.threads.setTitle") == 1
        assert fake.count("views.publish") == 1
        assert fake.home_views("UADA") == []
        assert all(
            not t.prompts and t.title is None for t in fake.workspace.assistant_threads.values()
        )
    off = [r.getMessage() for r in caplog.records if "stay off" in r.getMessage()]
    assert len(off) == 3
    assert any("suggested prompts" in m and "missing_scope" in m for m in off)
    assert any("thread titles" in m and "assistant:write" in m for m in off)
    assert any("the Home tab" in m and "not_enabled" in m for m in off)


async def test_doctor_says_whether_assistant_threads_have_their_scope(tmp_path: Path) -> None:
    from tests.adapters.slack.test_setup import doctor

    for scopes, ok, words in (
        (ALL_SCOPES, True, "suggested prompts (chosen by the bot's tools) and titles"),
        (ALL_SCOPES - {"assistant:write"}, None, "assistant:write not granted"),
    ):
        fake = FakeSlack(scopes=scopes)
        await fake.start()
        try:
            lines = await doctor(tmp_path, **fake.settings())
        finally:
            await fake.stop()
        (line,) = [(mark, t) for mark, t in lines if t.startswith("assistant threads")]
        assert line[0] is ok and words in line[1], line
        assert any(t.startswith("App Home:") and "app_home_opened" in t for _, t in lines)
    assert check_slack  # the check the doctor runs


def test_a_home_view_with_many_tools_and_threads_stays_within_slacks_limits() -> None:
    from adapters.slack.api import Identity
    from adapters.slack.home import home_view
    from bot.api.home import Ability, Home, RecentThread, Waiting
    from bot.api.inbound import ThreadKey

    home = Home(
        tuple(Ability(f"server{n}__tool", "does a thing. " * 9) for n in range(900)),
        tuple(
            RecentThread(ThreadKey(f"slack:T1:C{n}:1700000000.{n:06d}"), "<&>" * 40, 1.7e9)
            for n in range(10)
        ),
        (Waiting("a1", ThreadKey("slack:T1:C1:1.0"), "deploy", "Ada | Ops", None, 1.7e9),),
    )
    view = home_view(
        home, Identity("T1", "Team", "UBOT", "BBOT", "x" * 200, "https://t.slack.com/")
    )
    said = shown(view)
    assert len(view["blocks"]) <= 100
    assert "…and " in said and " more" in said  # what did not fit is counted
    assert "<https://t.slack.com/archives/C1/p10|open the thread>" in said
    assert "&lt;&amp;&gt;" in said and "<&>" not in said
