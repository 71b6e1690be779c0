"""The real ``threadline run`` answering 20 threads in 5 channels at once under Slack's tiers
(the fake's rate limits): the workspace's ``chat.update`` budget cannot edit every reply, so
finals are posted anew beside their drafts. Every thread must end as exactly one message with
its answer, every other message of the run (a draft, a "Working…" control message) gone within
``WITHIN_S`` of the answer, no 429's ``Retry-After`` ignored — on one worker, and on two workers
sharing a PostgreSQL database.

Time in the fake runs ``SCALE`` times faster, and the workers are given the same scaled budgets
(as an operator would set ``THREADLINE_SLACK_EDITS_PER_MINUTE``); ``WITHIN_S`` is in Slack time.
"""

from __future__ import annotations

import time
from contextlib import AsyncExitStack
from pathlib import Path

from tests.e2e.test_process_restart import free_port, threadline
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, MENTION, FakeSlack, Message
from tests.postgres import fresh_schema, postgres_database

__all__ = ["postgres_database"]

SCALE = 2.0
WAIT = 120.0
THREADS = 20
CHANNELS = tuple(f"CDRAFT{n}" for n in range(5))
WITHIN_S = 2.0
"""Slack seconds from an answer's final text to every other message of its run gone."""
FIRST_TEXT_S = 5.0
"""Slack seconds from a mention to the first words in its thread, at most (four threads in a
channel that allows a post a second show theirs within about three)."""


def answer_of(slack: FakeSlack, root: Message) -> Message | None:
    """The one message left in the thread, when it shows the demo model's whole answer."""
    left = [m for m in slack.replies(root.channel, root.ts) if not m.deleted]
    if len(left) != 1 or left[0].streaming or "offline demo model" not in left[0].shown:
        return None
    return left[0]


def posted(slack: FakeSlack, root: Message) -> list[Message]:
    """Every message the bot posted in the thread, deleted ones too."""
    return [
        m
        for m in slack.workspace.messages.values()
        if m.channel == root.channel and m.thread_ts == root.ts and m.bot_id
    ]


def first_text(slack: FakeSlack, root: Message) -> float:
    """When the thread first showed words of the answer (not "Working…")."""
    return min(
        at
        for m in posted(slack, root)
        for shown, at in zip(m.versions, m.version_times, strict=True)
        if shown.strip() and "Working" not in shown
    )


def lingered(slack: FakeSlack, root: Message, answer: Message) -> dict[str, float]:
    """Slack seconds each other message of the thread (by what it showed last) stayed after
    the answer's final text."""
    final_at = answer.version_times[-1]
    return {
        f"{m.ts} {m.shown[:24]!r}": max(0.0, (m.deleted_at or final_at) - final_at) * SCALE
        for m in posted(slack, root)
        if m is not answer
    }


async def answer_busy_workspace(tmp_path: Path, workers: int, database: str | None) -> None:
    slack = FakeSlack(time_scale=SCALE)
    slack.socket.spread = workers > 1
    for n, channel in enumerate(CHANNELS):
        slack.add_channel(channel, f"drafts-{n}")
    await slack.start()
    settings = {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_APP_TOKEN": APP_TOKEN,
        "SLACK_API_URL": slack.api_url,
        "THREADLINE_PLAYGROUND": "true",
        "THREADLINE_SLACK_EDITS_PER_MINUTE": str(48 * SCALE),
        "THREADLINE_SLACK_MIN_EDIT_INTERVAL": str(1 / SCALE),
        "THREADLINE_SLACK_POSTS_PER_MINUTE": str(45 * SCALE),
        "THREADLINE_SLACK_STREAM_STARTS_PER_MINUTE": str(15 * SCALE),
        "THREADLINE_SLACK_STREAM_APPENDS_PER_MINUTE": str(80 * SCALE),
        "THREADLINE_DEMO_CHUNK_DELAY_S": "0.05",
    }
    if database is not None:
        settings["THREADLINE_DATABASE_URL"] = await fresh_schema(database)
    try:
        async with AsyncExitStack() as stack:
            for n in range(workers):
                home = tmp_path / f"worker{n}"
                home.mkdir()
                await stack.enter_async_context(
                    threadline(home, free_port(), THREADLINE_WORKER_ID=f"worker{n}", **settings)
                )
            await slack.wait_for(lambda: len(slack.socket.connections) == workers, WAIT)
            said, roots = [], []
            for n in range(THREADS):
                said.append(time.monotonic())
                channel = CHANNELS[n % len(CHANNELS)]
                roots.append(
                    await slack.say("UADA", channel, f"{MENTION} tell me about drafts {n}")
                )
            await slack.wait_for(lambda: all(answer_of(slack, r) for r in roots), WAIT)
    finally:
        await slack.stop()
    answers = [answer_of(slack, r) for r in roots]
    assert all(a is not None and f"drafts {n}" in a.shown for n, a in enumerate(answers))
    late = {}
    for n, (root, answer) in enumerate(zip(roots, answers, strict=True)):
        stays = lingered(slack, root, answer) if answer is not None else {}
        if any(s > WITHIN_S for s in stays.values()):
            late[n] = stays
    assert not late, f"messages beside the answer for longer than {WITHIN_S} s: {late}"
    assert not slack.limits.violations, slack.limits.violations
    waits = [first_text(slack, root) - at for root, at in zip(roots, said, strict=True)]
    assert max(waits) * SCALE <= FIRST_TEXT_S, f"first text after {sorted(waits)} s (x{SCALE:g})"


async def test_one_worker_leaves_one_message_per_thread_in_a_busy_workspace(
    tmp_path: Path,
) -> None:
    await answer_busy_workspace(tmp_path, 1, None)


async def test_two_workers_leave_one_message_per_thread_in_a_busy_workspace(
    tmp_path: Path, postgres_database: str
) -> None:
    await answer_busy_workspace(tmp_path, 2, postgres_database)
