"""The real program on the fake Slack and the fake OpenAI server, with text and answers that
are not what a chat expects: a message and a model stream holding a lone surrogate, a model
that answers only whitespace."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_process_restart import free_port, threadline
from tests.fakes.openai_server import FakeOpenAI, Raw, Reply
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, MENTION, FakeSlack, Message

WAIT = 30.0


def stream(*texts: str) -> Raw:
    """A model stream of ``texts`` as content deltas, JSON escapes as a server writes them."""
    chunks = [{"choices": [{"index": 0, "delta": {"content": t}}]} for t in texts]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return Raw(
        b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"
    )


def settings(slack: FakeSlack, model: FakeOpenAI) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "sk-test",
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_APP_TOKEN": APP_TOKEN,
        "SLACK_API_URL": slack.api_url,
        "THREADLINE_PLAYGROUND": "true",
    }


async def shown(slack: FakeSlack, root: Message, count: int) -> list[str]:
    await slack.wait_for(lambda: len(slack.replies(root.channel, root.ts)) >= count, WAIT)
    return [m.shown for m in slack.replies(root.channel, root.ts)]


async def test_a_lone_surrogate_and_a_blank_answer_each_get_a_reply(tmp_path: Path) -> None:
    slack = FakeSlack()
    await slack.start()
    try:
        async with FakeOpenAI() as model:
            model.push(stream("fine \udc00 ", "thanks"), Reply("   \n\t  "), Reply(" \n"))
            async with threadline(tmp_path, free_port(), **settings(slack, model)):
                await slack.wait_for(lambda: bool(slack.socket.connections), WAIT)
                root = await slack.say("UADA", "CGENERAL", f"{MENTION} bad \ud800 end")
                assert await shown(slack, root, 1) == ["fine \ufffd thanks"]

                await slack.say("UADA", "CGENERAL", "and now?", thread_ts=root.ts)
                replies = await shown(slack, root, 2)
                assert "the model returned nothing, twice" in replies[1]
        assert model.requests[0].messages[-1]["content"] == "[Ada]: bad \ufffd end"
        assert len(model.requests) == 3
        assert "was empty" in model.requests[2].messages[-1]["content"]
    finally:
        await slack.stop()
