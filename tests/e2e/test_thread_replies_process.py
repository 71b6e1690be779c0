"""The real program on the fake Slack: a channel set to answer mentions only
(``thread_replies = "mentions"`` in threadline.toml) leaves a message without a mention
unanswered, then reads it, with its author, when it is mentioned; the quiet shortcut (a
``message_action`` over Socket Mode) does the same for one thread of a channel that answers
everything."""

from __future__ import annotations

from pathlib import Path

from bot.thread.operations import QUIET
from tests.e2e.test_process_restart import free_port, threadline
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, MENTION, FakeSlack

WAIT = 30.0
TOML = """
[channels."slack:T0FAKE:CGENERAL"]
thread_replies = "mentions"
"""


async def test_mentions_only_and_a_quiet_thread(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text(TOML)
    slack = FakeSlack()
    await slack.start()
    try:
        async with FakeOpenAI() as model:
            model.push(
                Reply("Watching it."),
                Reply("Clear the disk, then."),
                Reply("Hello in secret."),
                Reply("Grace said the cache."),
            )
            settings = {
                "OPENAI_BASE_URL": model.base_url,
                "OPENAI_API_KEY": "sk-test",
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_APP_TOKEN": APP_TOKEN,
                "SLACK_API_URL": slack.api_url,
                "THREADLINE_PLAYGROUND": "true",
            }
            async with threadline(tmp_path, free_port(), **settings):
                await slack.wait_for(lambda: bool(slack.socket.connections), WAIT)

                def answered(channel: str, root: str, count: int) -> bool:
                    return len(slack.replies(channel, root)) >= count

                root = await slack.say("UADA", "CGENERAL", f"{MENTION} watch the deploy")
                await slack.wait_for(lambda: answered("CGENERAL", root.ts, 1), WAIT)
                await slack.say("UGRACE", "CGENERAL", "Disk full again", thread_ts=root.ts)
                await slack.say("UADA", "CGENERAL", f"{MENTION} what now?", thread_ts=root.ts)
                await slack.wait_for(lambda: answered("CGENERAL", root.ts, 2), WAIT)

                other = await slack.say("UADA", "GSECRET", f"{MENTION} hi")
                await slack.wait_for(lambda: answered("GSECRET", other.ts, 1), WAIT)
                delivery = await slack.shortcut("UADA", other, "threadline_quiet")
                assert delivery.acked_in_time
                await slack.wait_for(lambda: slack.ephemerals("UADA") == [QUIET], WAIT)
                await slack.say("UGRACE", "GSECRET", "it was the cache", thread_ts=other.ts)
                await slack.say("UADA", "GSECRET", f"{MENTION} who said what?", thread_ts=other.ts)
                await slack.wait_for(lambda: answered("GSECRET", other.ts, 2), WAIT)

        assert len(model.requests) == 4  # nothing else was answered
        assert [m.shown for m in slack.replies("CGENERAL", root.ts)] == [
            "Watching it.",
            "Clear the disk, then.",
        ]
        said = [m["content"] for m in model.requests[1].messages if m["role"] == "user"]
        assert said[-2:] == ["[Grace]: Disk full again", "[Ada]: what now?"]
        said = [m["content"] for m in model.requests[3].messages if m["role"] == "user"]
        assert said[-2:] == ["[Grace]: it was the cache", "[Ada]: who said what?"]
    finally:
        await slack.stop()
