"""The real ``threadline run`` on the fake Slack, over Socket Mode and over HTTP: an assistant
thread started in the AI app's panel gets its suggested prompts (from
``THREADLINE_SLACK_SUGGESTED_PROMPTS`` when set), its first question is answered in the thread
and titles it, and the Home tab then lists the bot's tools and that thread."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import pytest

from tests.e2e.test_process_restart import free_port, threadline
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, SIGNING_SECRET, FakeSlack

WAIT = 30.0
CONFIGURED = ["Summarise the incident channel", "Draft the weekly update"]


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_an_assistant_thread_and_the_home_tab(
    tmp_path: Path, mode: Literal["socket", "http"]
) -> None:
    slack = FakeSlack(mode=mode)
    await slack.start()
    port = free_port()
    link = (
        {"SLACK_APP_TOKEN": APP_TOKEN}
        if mode == "socket"
        else {"SLACK_SIGNING_SECRET": SIGNING_SECRET}
    )
    configured = (
        {"THREADLINE_SLACK_SUGGESTED_PROMPTS": json.dumps(CONFIGURED)} if mode == "socket" else {}
    )
    settings = {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_API_URL": slack.api_url,
        "THREADLINE_PLAYGROUND": "true",
        "THREADLINE_SLACK_STREAMING": "edit",
        **link,
        **configured,
    }
    try:
        async with threadline(tmp_path, port, **settings):
            if mode == "socket":
                await slack.wait_for(lambda: bool(slack.socket.connections), WAIT)
            else:
                slack.http_target = f"http://127.0.0.1:{port}/slack/events"
            root = await slack.start_assistant_thread("UADA", context_channel="CGENERAL")
            thread = slack.assistant_thread(root)
            await slack.wait_for(lambda: bool(thread.prompts), WAIT)

            await slack.say("UADA", root.channel, "What is a thread key?", thread_ts=root.ts)
            await slack.wait_for(
                lambda: any(
                    "offline demo model" in m.shown for m in slack.replies(root.channel, root.ts)
                ),
                WAIT,
            )
            await slack.wait_for(lambda: thread.title is not None, WAIT)

            await slack.open_home("UADA")
            await slack.wait_for(lambda: bool(slack.home_views("UADA")), WAIT)
    finally:
        await slack.stop()
    titles = [p["title"] for p in thread.prompts]
    if mode == "socket":
        assert titles == CONFIGURED
    else:
        assert titles[0] == "What can you do?" and len(titles) <= 4
    assert thread.title == "What is a thread key?"
    (view,) = slack.home_views("UADA")
    said = "\n".join(b.get("text", {}).get("text", "") for b in view["blocks"])
    assert "`todo_write`" in said and "Your recent threads" in said
    assert f"p{root.ts.replace('.', '')}|What is a thread key?>" in said
