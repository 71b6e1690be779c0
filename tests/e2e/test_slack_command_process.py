"""The real program on the fake Slack: first mentioned inside an existing thread, it reads what
was said there; ``/threadline model`` (a slash command over Socket Mode, answered through its
``response_url``) changes that thread's model, and the next request names it."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_process_restart import free_port, threadline
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, MENTION, FakeSlack

WAIT = 30.0


async def test_history_then_a_model_for_one_thread(tmp_path: Path) -> None:
    slack = FakeSlack()
    await slack.start()
    try:
        async with FakeOpenAI() as model:
            model.push(Reply("Free some disk space first."), Reply("Done, with the other model."))
            settings = {
                "OPENAI_BASE_URL": model.base_url,
                "OPENAI_API_KEY": "sk-test",
                "THREADLINE_MODEL": "small-model",
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_APP_TOKEN": APP_TOKEN,
                "SLACK_API_URL": slack.api_url,
                "THREADLINE_PLAYGROUND": "true",
                "THREADLINE_MODELS": '["small-model", "big-model"]',
            }
            async with threadline(tmp_path, free_port(), **settings):
                await slack.wait_for(lambda: bool(slack.socket.connections), WAIT)
                root = await slack.say("UADA", "CGENERAL", "The deploy failed again")
                await slack.say(
                    "UGRACE", "CGENERAL", "Disk full, same as yesterday", thread_ts=root.ts
                )
                await slack.say("UADA", "CGENERAL", f"{MENTION} what now?", thread_ts=root.ts)
                await slack.wait_for(
                    lambda: any(
                        "disk space" in m.shown for m in slack.replies("CGENERAL", root.ts)
                    ),
                    WAIT,
                )

                link = f"https://fake.slack.com/archives/CGENERAL/p{root.ts.replace('.', '')}"
                call = await slack.slash("UADA", "CGENERAL", f"model big-model {link}")
                assert call.delivery is not None and call.delivery.acked_in_time
                await slack.wait_for(lambda: bool(call.answers), WAIT)
                assert call.shown == [
                    "This thread now uses big-model; other threads are unchanged."
                ]

                await slack.say("UGRACE", "CGENERAL", "and now?", thread_ts=root.ts)
                await slack.wait_for(
                    lambda: any(
                        "other model" in m.shown for m in slack.replies("CGENERAL", root.ts)
                    ),
                    WAIT,
                )
        first, second = model.requests
        assert first.body["model"] == "small-model" and second.body["model"] == "big-model"
        asked = first.messages[-1]["content"]
        assert "[Ada]: The deploy failed again\n[Grace]: Disk full, same as yesterday" in asked
        assert asked.endswith("[Ada]: what now?")
        assert second.messages[-1]["content"] == "[Grace]: and now?"
    finally:
        await slack.stop()
