"""The real program on the fake Slack (Socket Mode and HTTP) with approvers in threadline.toml:
the card names who can decide when the person who asked cannot, that person gets a direct
message with a link to the card, and a request nobody decides escalates once to a user group,
whose member is told, may decide, and does."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Literal

import pytest

from tests.e2e.test_process_restart import free_port, threadline
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, MENTION, SIGNING_SECRET, FakeSlack, Message
from tests.fakes.slack.state import User

WAIT = 30.0
TOML = """
[tools.write_file]
approval = "always"
approvers = { requester = false, users = ["slack:UGRACE"], escalate_to = ["slack:group:SOPS"], escalate_after = "4s" }
"""


def dms(slack: FakeSlack, user: str) -> list[Message]:
    """What the bot sent ``user`` in their direct message with it."""
    return [
        m
        for (channel, _), m in slack.workspace.messages.items()
        if channel == f"D{user}" and not m.deleted
    ]


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_approvers_are_told_and_an_undecided_request_escalates(
    tmp_path: Path, mode: Literal["socket", "http"]
) -> None:
    (tmp_path / "threadline.toml").write_text(TOML)
    slack = FakeSlack(mode=mode)
    slack.workspace.add_user(User("UALAN", "alan", "Alan", "Alan Turing"))
    slack.workspace.usergroups["SOPS"] = {"UALAN", "UADA"}
    slack.workspace.usergroup_handles["SOPS"] = "ops"
    await slack.start()
    port = free_port()
    settings = {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_API_URL": slack.api_url,
        "THREADLINE_PLAYGROUND": "true",
        "THREADLINE_SLACK_STREAMING": "edit",
    }
    if mode == "socket":
        settings["SLACK_APP_TOKEN"] = APP_TOKEN
    else:
        settings["SLACK_SIGNING_SECRET"] = SIGNING_SECRET
    try:
        async with FakeOpenAI() as model:
            model.push(
                Reply(calls=[FakeCall("write_file", {"path": "note.txt", "content": "hi"})]),
                Reply("Written."),
            )
            settings |= {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test"}
            async with threadline(tmp_path, port, **settings):
                if mode == "socket":
                    await slack.wait_for(lambda: bool(slack.socket.connections), WAIT)
                else:
                    slack.http_target = f"http://127.0.0.1:{port}/slack/events"
                root = await slack.say("UADA", "CGENERAL", f"{MENTION} write a note")

                def card() -> Message | None:
                    return next(
                        (
                            m
                            for m in slack.replies("CGENERAL", root.ts)
                            if "`write_file`" in m.shown and m.buttons
                        ),
                        None,
                    )

                await slack.wait_for(lambda: card() is not None, WAIT)
                shown = card()
                assert shown is not None
                assert "Who can decide: Grace." in shown.shown
                assert "@ops can decide too" in shown.shown
                await slack.wait_for(lambda: bool(dms(slack, "UGRACE")), WAIT)
                told = dms(slack, "UGRACE")[0].shown
                assert "Ada asks Threadline to run `write_file` in #general" in told
                link = f"https://fake.slack.invalid/archives/CGENERAL/p{shown.ts.replace('.', '')}"
                assert link in told

                await slack.wait_for(lambda: bool(dms(slack, "UALAN")), WAIT)
                assert "Nobody has decided yet" in dms(slack, "UALAN")[0].shown
                assert dms(slack, "UADA") == []  # the person who asked is never told
                await slack.wait_for(
                    lambda: "Nobody decided in time" in (card() or shown).shown, WAIT
                )
                escalated = card()
                assert escalated is not None
                await slack.click("UALAN", escalated, "Approve")
                await slack.wait_for(
                    lambda: any("Written." in m.shown for m in slack.replies("CGENERAL", root.ts)),
                    WAIT,
                )
                assert any(
                    "Approved** by Alan" in m.shown or "Approved by Alan" in m.shown
                    for m in slack.replies("CGENERAL", root.ts)
                )
                assert len(dms(slack, "UGRACE")) == 1 and len(dms(slack, "UALAN")) == 1
    finally:
        await slack.stop()


async def test_a_restart_sends_nothing_twice_and_the_escalation_still_comes(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text(TOML.replace('"4s"', '"6s"'))
    slack = FakeSlack()
    slack.workspace.add_user(User("UALAN", "alan", "Alan", "Alan Turing"))
    slack.workspace.usergroups["SOPS"] = {"UALAN"}
    await slack.start()
    port = free_port()
    try:
        async with FakeOpenAI() as model:
            model.push(
                Reply(calls=[FakeCall("write_file", {"path": "note.txt", "content": "hi"})]),
                Reply("Written."),
            )
            settings = {
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_APP_TOKEN": APP_TOKEN,
                "SLACK_API_URL": slack.api_url,
                "THREADLINE_PLAYGROUND": "true",
                "THREADLINE_SLACK_STREAMING": "edit",
                "OPENAI_BASE_URL": model.base_url,
                "OPENAI_API_KEY": "sk-test",
            }
            async with threadline(tmp_path, port, **settings) as first:
                await slack.wait_for(lambda: bool(slack.socket.connections), WAIT)
                root = await slack.say("UADA", "CGENERAL", f"{MENTION} write a note")
                await slack.wait_for(lambda: bool(dms(slack, "UGRACE")), WAIT)
                first.send_signal(signal.SIGKILL)
                await first.wait()
            await slack.wait_for(lambda: not slack.socket.connections, WAIT)
            async with threadline(tmp_path, port, **settings):
                await slack.wait_for(lambda: bool(slack.socket.connections), WAIT)
                await slack.wait_for(lambda: bool(dms(slack, "UALAN")), WAIT)
                card = next(m for m in slack.replies("CGENERAL", root.ts) if m.buttons)
                await slack.click("UALAN", card, "Approve")
                await slack.wait_for(
                    lambda: any("Written." in m.shown for m in slack.replies("CGENERAL", root.ts)),
                    WAIT,
                )
        assert len(dms(slack, "UGRACE")) == 1 and len(dms(slack, "UALAN")) == 1
    finally:
        await slack.stop()
