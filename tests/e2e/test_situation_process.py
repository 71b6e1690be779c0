"""The real program on the fake Slack and the fake OpenAI server: each model call ends with a note
of where and when it is (the date and time in UTC and the configured zone, the platform, the
channel's name, who wrote in the thread)."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from tests.e2e.test_process_restart import free_port, threadline
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, MENTION, FakeSlack

WAIT = 30.0


async def test_the_model_is_told_the_date_the_channel_and_the_people(tmp_path: Path) -> None:
    slack = FakeSlack()
    await slack.start()
    try:
        async with FakeOpenAI() as model:
            model.push(Reply("Friday works."), Reply("Noted."))
            settings = {
                "OPENAI_BASE_URL": model.base_url,
                "OPENAI_API_KEY": "sk-test",
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_APP_TOKEN": APP_TOKEN,
                "SLACK_API_URL": slack.api_url,
                "THREADLINE_TIMEZONE": "Europe/Paris",
                "THREADLINE_PLAYGROUND": "true",
            }
            async with threadline(tmp_path, free_port(), **settings):
                await slack.wait_for(lambda: bool(slack.socket.connections), WAIT)
                root = await slack.say("UADA", "CGENERAL", f"{MENTION} when do we ship?")
                await slack.wait_for(lambda: _shown(slack, root.ts, "Friday works."), WAIT)
                await slack.say("UGRACE", "CGENERAL", "Friday is fine", thread_ts=root.ts)
                await slack.wait_for(lambda: _shown(slack, root.ts, "Noted."), WAIT)
        first, second = (_note(r.messages) for r in model.requests)
        today = datetime.fromtimestamp(time.time(), ZoneInfo("UTC"))
        assert first.startswith(f"Now: {today:%A %d %B %Y}, ")
        assert "in Europe/Paris, the channel's time zone)" in first
        assert "Place: a thread in the channel 'general' on Slack." in first
        assert first.endswith('<tool_output tool="people">\nAda\n</tool_output>')
        assert second.endswith('<tool_output tool="people">\nAda\nGrace\n</tool_output>')
    finally:
        await slack.stop()


def _shown(slack: FakeSlack, ts: str, text: str) -> bool:
    return any(m.shown == text for m in slack.replies("CGENERAL", ts))


def _note(messages: list[dict[str, object]]) -> str:
    notes = [
        str(m["content"])
        for m in messages
        if m["role"] == "system" and str(m["content"]).startswith("Now: ")
    ]
    assert len(notes) == 1, messages
    return notes[0]
