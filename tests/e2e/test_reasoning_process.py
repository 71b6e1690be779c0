"""The real program on the fake Slack and the fake OpenAI server, with a reasoning model: each
request carries the sampling set globally and in the model's own table, the thread says the bot
is thinking while the model reasons, then shows the answer; the reasoning reaches neither the
thread, nor the database, nor the log. ``/threadline status`` says how full the model's context
window is."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.e2e.test_process_restart import free_port, threadline
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, MENTION, FakeSlack

WAIT = 30.0
REASONING = "Private musing: SECRET-PLAN-42 is what I must never say."
MARK = "SECRET-PLAN"
CONFIG = """
max_output_tokens = 2000

[per_model."qwen3"]
temperature = 0.6
reasoning_effort = "high"
context_window = 32000
"""


def stored(data_dir: Path) -> bytes:
    return b"".join(f.read_bytes() for f in data_dir.glob("threadline.sqlite3*"))


async def test_a_reasoning_model_shows_thinking_then_its_answer_only(tmp_path: Path) -> None:
    (tmp_path / "threadline.toml").write_text(CONFIG)
    slack = FakeSlack()
    await slack.start()
    try:
        async with FakeOpenAI() as model:
            reasoned = asyncio.Event()
            model.push(
                Reply("The build is green.", reasoning=REASONING, hold_after_reasoning=reasoned)
            )
            settings = {
                "OPENAI_BASE_URL": model.base_url,
                "OPENAI_API_KEY": "sk-test",
                "THREADLINE_MODEL": "qwen3",
                "THREADLINE_TOP_P": "0.9",
                "THREADLINE_SEED": "5",
                "THREADLINE_LOG_LEVEL": "DEBUG",
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_APP_TOKEN": APP_TOKEN,
                "SLACK_API_URL": slack.api_url,
                "THREADLINE_PLAYGROUND": "true",
            }
            async with threadline(tmp_path, free_port(), **settings) as proc:
                assert proc.stdout is not None
                logged = asyncio.ensure_future(proc.stdout.read())
                await slack.wait_for(lambda: bool(slack.socket.connections), WAIT)
                root = await slack.say("UADA", "CGENERAL", f"{MENTION} is the build green?")

                def replies() -> list[str]:
                    return [m.shown for m in slack.replies("CGENERAL", root.ts)]

                await model.wait_for_requests(1, WAIT)
                await slack.wait_for(
                    lambda: "thinking" in slack.workspace.status("CGENERAL", root.ts), WAIT
                )
                assert replies() == []  # the model reasons: nothing but the status line
                reasoned.set()
                await slack.wait_for(lambda: any("green" in r for r in replies()), WAIT)

                link = f"https://fake.slack.com/archives/CGENERAL/p{root.ts.replace('.', '')}"
                call = await slack.slash("UADA", "CGENERAL", f"status {link}")
                await slack.wait_for(lambda: bool(call.answers), WAIT)

                proc.terminate()
                async with asyncio.timeout(WAIT):
                    log = (await logged).decode()
                    await proc.wait()
        [request] = model.requests
        assert request.params == {
            "temperature": 0.6,
            "top_p": 0.9,
            "seed": 5,
            "reasoning_effort": "high",
            "max_tokens": 2000,
        }
        assert replies() == ["The build is green."]
        assert "of 32,000 tokens" in call.shown[0] and "Context: " in call.shown[0]
        shown = [v for m in slack.replies("CGENERAL", root.ts) for v in m.versions]
        statuses = slack.status_history("CGENERAL", root.ts)
        assert not any(MARK in text for text in [*shown, *statuses, *call.shown])
        assert MARK not in log and "qwen3" in log  # the log was read, and holds no reasoning
        assert MARK.encode() not in stored(tmp_path / "data")
    finally:
        await slack.stop()
