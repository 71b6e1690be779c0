"""The real ``threadline run`` under Slack's tiers (the fake's rate limits): a 429 on one stream
pauses its method for every stream, and many answers at once each end as one message."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_process_restart import free_port, threadline
from tests.fakes.slack import BOT_TOKEN, MENTION, SIGNING_SECRET, FakeSlack, Message

WAIT = 60.0


def answered(slack: FakeSlack, root: Message, words: str) -> bool:
    """The thread shows the demo model's whole answer to ``words``."""
    return any(
        words in m.shown and "offline demo model" in m.shown
        for m in slack.replies(root.channel, root.ts)
    )


async def test_a_429_pauses_its_method_for_every_stream_in_http_mode(tmp_path: Path) -> None:
    slack = FakeSlack(mode="http")
    await slack.start()
    port = free_port()
    settings = {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_API_URL": slack.api_url,
        "THREADLINE_PLAYGROUND": "true",
        "THREADLINE_SLACK_STREAMING": "edit",
        "THREADLINE_DEMO_CHUNK_DELAY_S": "0.02",
    }
    try:
        async with threadline(tmp_path, port, **settings):
            slack.http_target = f"http://127.0.0.1:{port}/slack/events"
            slack.limits.storm("chat.postMessage", 1, retry_after=0.5)
            roots = [
                await slack.say("UADA", "CGENERAL", f"{MENTION} tell me about pauses {n}")
                for n in range(3)
            ]
            await slack.wait_for(
                lambda: all(answered(slack, r, f"pauses {n}") for n, r in enumerate(roots)), WAIT
            )
    finally:
        await slack.stop()
    assert slack.limits.rejected["chat.postMessage"] >= 1  # the one injected (and the tier's)
    assert not slack.limits.violations  # no call while a Retry-After ran
    assert all(len(slack.replies(r.channel, r.ts)) == 1 for r in roots)
