"""The real program on the fake Slack and the fake OpenAI server: mentioned for the first time in
a long thread, it reads the thread's first and most recent messages and tells the model how many
between them it did not show."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_process_restart import free_port, threadline
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, MENTION, FakeSlack

WAIT = 30.0


async def test_a_first_mention_in_a_long_thread_says_what_it_left_out(tmp_path: Path) -> None:
    slack = FakeSlack()
    await slack.start()
    try:
        async with FakeOpenAI() as model:
            model.push(Reply("They chose Friday."))
            settings = {
                "OPENAI_BASE_URL": model.base_url,
                "OPENAI_API_KEY": "sk-test",
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_APP_TOKEN": APP_TOKEN,
                "SLACK_API_URL": slack.api_url,
                "THREADLINE_THREAD_HISTORY_MESSAGES": "4",
                "THREADLINE_PLAYGROUND": "true",
            }
            async with threadline(tmp_path, free_port(), **settings):
                await slack.wait_for(lambda: bool(slack.socket.connections), WAIT)
                root = await slack.say("UADA", "CGENERAL", "When do we ship?")
                for n in range(40):
                    await slack.say("UGRACE", "CGENERAL", f"idea {n}", thread_ts=root.ts)
                await slack.say(
                    "UADA", "CGENERAL", f"{MENTION} what did they decide?", thread_ts=root.ts
                )
                await slack.wait_for(
                    lambda: any("Friday" in m.shown for m in slack.replies("CGENERAL", root.ts)),
                    WAIT,
                )
        (request,) = model.requests
        asked = request.messages[-1]["content"]
        assert (
            "[Ada]: When do we ship?\n(… 37 earlier messages not shown)\n[Grace]: idea 37\n"
            in asked
        )
        assert "[Grace]: idea 39\n" in asked and "idea 36" not in asked
    finally:
        await slack.stop()
