"""The real ``threadline run`` on the fake Slack, killed with SIGKILL at random moments while
shared files download (a seeded ``random.Random`` picks how far each download got), and
started again on the same data directory each time. A person keeps sharing files, in new
threads and as follow-ups, each download spread over seconds; a message left half-downloaded
is fetched again after the restart, where it may be cut off again.

Once everything is idle the threads must show: every message answered once (no message lost,
none answered twice), each answered with its file read, and every file in its thread's
workspace. One summary line prints the figures.
"""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_process_restart import free_port
from tests.fakes.faulty_body import Fault
from tests.fakes.openai_server import FakeOpenAI, Reply, Response
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, MENTION, FakeSlack
from tests.fakes.slack.state import Message
from tests.reliability.test_random_kills import program
from tests.reliability.world import text_of

SEED = int(os.environ.get("THREADLINE_KILL_SEED", "12"))
KILLS = int(os.environ.get("THREADLINE_DOWNLOAD_KILLS", "8"))
SIZE = 512 * 1024
SLOW_S = 2.0
WAIT = 30.0
SETTLE = 60.0


def answer(body: dict[str, Any]) -> Response:
    """Says which file it was shown (its name is in the message the model reads)."""
    said = text_of(body.get("messages", [{}])[-1])
    shown = [w for w in said.split() if w.startswith("file-") and w.endswith(".txt")]
    return Reply(f"Read {shown[0] if shown else 'nothing'}.")


def contents(n: int) -> bytes:
    line = f"line of file {n}\n".encode()
    return (line * (SIZE // len(line) + 1))[:SIZE]


async def one_life(
    slack: FakeSlack, rng: random.Random, roots: list[Message], n: int
) -> tuple[Message, str]:
    """Share file ``n`` (a new thread, or a follow-up in one); returns its thread and name."""
    name = f"file-{n}.txt"
    shared = slack.files.share(name, contents(n), "text/plain")
    fault = Fault(seconds=SLOW_S)
    slack.files.faults[shared["id"]] = fault
    if roots and rng.random() < 0.4:
        root = rng.choice(roots)
        await slack.say("UADA", "CGENERAL", f"and {name}", thread_ts=root.ts, files=[shared])
    else:
        root = await slack.say("UADA", "CGENERAL", f"{MENTION} read {name}", files=[shared])
        roots.append(root)
    cut_at = int(SIZE * rng.uniform(0.05, 0.95))
    await slack.wait_for(lambda: fault.sent >= cut_at, WAIT)
    return root, name


def asked_in(slack: FakeSlack, root: Message) -> int:
    """People's messages in the thread."""
    return sum(1 for m in slack.thread("CGENERAL", root.ts) if m.user == "UADA")


@pytest.mark.timeout(300)
async def test_kills_during_downloads_lose_nothing_and_answer_once(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    slack = FakeSlack(time_scale=60.0)  # a connection a restart, many a minute: Slack's limits
    await slack.start()  # are per minute, scaled down to the second here
    roots: list[Message] = []
    names: list[str] = []
    try:
        async with FakeOpenAI(default=answer) as model:
            settings = {
                "OPENAI_BASE_URL": model.base_url,
                "OPENAI_API_KEY": "sk-test",
                "THREADLINE_MODEL": "gpt-4o",
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_APP_TOKEN": APP_TOKEN,
                "SLACK_API_URL": slack.api_url,
                "THREADLINE_PLAYGROUND": "true",
                "THREADLINE_WORKSPACE_TOOLS": "false",
                "THREADLINE_DATA_DIR": str(tmp_path / "data"),
                "THREADLINE_HTTP_PORT": str(port := free_port()),
            }
            for n in range(KILLS):
                before = set(map(id, slack.socket.connections))
                async with program(tmp_path, port, settings) as proc:
                    await slack.wait_for(
                        lambda b=before: any(id(ws) not in b for ws in slack.socket.connections),
                        WAIT,
                    )
                    root, name = await one_life(slack, rng, roots, n)
                    names.append(name)
                    proc.send_signal(signal.SIGKILL)
                    await proc.wait()
            async with program(tmp_path, port, settings):
                await slack.wait_for(
                    lambda: all(
                        len(slack.replies("CGENERAL", r.ts)) >= asked_in(slack, r) for r in roots
                    ),
                    SETTLE,
                )
                replies = {r.ts: [m.shown for m in slack.replies("CGENERAL", r.ts)] for r in roots}
    finally:
        await slack.stop()

    answered = [text for texts in replies.values() for text in texts]
    saved = {p.name for p in (tmp_path / "data" / "workspaces").glob("*/file-*.txt")}
    downloads = len(slack.files.downloads)
    print(
        f"\nkills during downloads (seed {SEED}): kills={KILLS} threads={len(roots)} "
        f"messages={len(names)} answers={len(answered)} downloads={downloads} saved={len(saved)}"
    )
    for root in roots:
        assert len(replies[root.ts]) == asked_in(slack, root), replies[root.ts]  # once each
    assert sorted(answered) == sorted(f"Read {name}." for name in names)  # each with its file
    assert saved == set(names)
