"""The real program on the fake Slack and the fake OpenAI server, with text and answers that
are not what a chat expects: a message and a model stream holding a lone surrogate, a model
that answers only whitespace, an answer of megabytes, a model server that asks to wait or sends
an empty stream."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.e2e.test_process_restart import browser, free_port, open_page, threadline, until_event
from tests.fakes.openai_server import FakeOpenAI, Fault, Raw, Reply
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


async def test_a_five_megabyte_answer_continues_in_a_file_in_the_playground(
    tmp_path: Path,
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    line = "a line of a very long answer, one of many thousands of the same\n"
    whole = line * (5_000_000 // len(line))
    async with FakeOpenAI() as model:
        model.push(Reply(whole, text_chunk_chars=100_000))
        settings = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test"}
        async with browser() as http, threadline(tmp_path, port, **settings):
            await open_page(http, base)
            async with http.ws_connect(f"{base}/api/ws?client=t") as ws:
                said = {
                    "text": "Everything, please.",
                    "event_id": "event-huge-1",
                    "user_name": "Ada",
                }
                async with http.post(f"{base}/api/messages", json=said) as resp:
                    assert resp.status == 202, await resp.text()
                    thread_id = (await resp.json())["thread_id"]
                posted = await until_event(
                    ws,
                    lambda e: (
                        e.get("type") == "message"
                        and e["message"]["bot"]
                        and bool(e["message"]["files"])
                    ),
                )
            (file,) = posted["message"]["files"]
            assert file["name"] == "answer.md"
            async with http.get(f"{base}/api/files/{thread_id}/{file['id']}") as download:
                assert download.status == 200
                rest = (await download.read()).decode()
            async with http.get(f"{base}/api/threads/{thread_id}") as resp:
                messages = (await resp.json())["messages"]
        replies = [m["text"] for m in messages if m["bot"] and not m["files"]]
        assert 1 <= len(replies) <= 4  # 12,000 characters, not 1,250 messages of 4,000
        assert replies[-1].endswith(
            f"_… the rest of the answer ({len(rest):,} more characters) is in answer.md, below._"
        )
        assert rest == whole[whole.index("\n", 12_000) + 1 :]


async def test_a_wait_the_model_server_asks_for_is_said_then_answered(tmp_path: Path) -> None:
    slack = FakeSlack()
    await slack.start()
    try:
        async with FakeOpenAI() as model:
            model.push(Fault.rate_limited(retry_after="2"), Reply("Worth the wait."))
            model.push(*[Raw(b"data: [DONE]\n\n")] * 2)
            one_retry = {**settings(slack, model), "THREADLINE_MODEL_MAX_RETRIES": "1"}
            async with threadline(tmp_path, free_port(), **one_retry):
                await slack.wait_for(lambda: bool(slack.socket.connections), WAIT)
                root = await slack.say("UADA", "CGENERAL", f"{MENTION} are you there?")
                await slack.wait_for(  # the answer, and the run's Stop message gone with the run
                    lambda: (
                        [m.shown.endswith("wait.") for m in slack.replies("CGENERAL", root.ts)]
                        == [True]
                    ),
                    WAIT,
                )
                (reply,) = slack.replies("CGENERAL", root.ts)
                assert re.fullmatch(
                    r"_The model server asked to wait 2 s; retrying at \d\d:\d\d:\d\d UTC\._\n\n"
                    r"Worth the wait\.",
                    reply.shown,
                ), reply.shown

                await slack.say("UADA", "CGENERAL", "and again?", thread_ts=root.ts)
                replies = await shown(slack, root, 2)
                assert replies[1].startswith("⚠️ The model server sent nothing (an empty stream).")
        assert len(model.requests) == 2 + 2  # the empty stream: the call and its one retry
    finally:
        await slack.stop()
