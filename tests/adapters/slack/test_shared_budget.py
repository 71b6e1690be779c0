"""Two workers (two runtimes: core, Slack adapter, slack-bolt, slack_sdk) on one PostgreSQL
database and one fake Slack workspace, streaming replies in several threads at once: together
they keep within the workspace's ``chat.update`` limit, and a 429 one of them gets pauses both.

The fake hands each mention to the two Socket Mode connections in turn, enforces Tier 3 (50
``chat.update`` a minute for the workspace) and answers 429 with ``Retry-After``. Time runs
``SCALE`` times faster (the fake's windows, the adapters' budget); the model streams at a fixed
pace, which is what keeps the edits coming while the test watches.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from adapters.runtime import Runtime
from bot.llm.messages import Usage, UserMessage
from bot.llm.model import FinishPiece, ModelPiece, ModelRequest, TextPiece, UsagePiece
from tests.adapters.slack.conftest import PLATFORM_ENV
from tests.fakes.config import configure
from tests.fakes.slack import MENTION, FakeSlack, Message
from tests.postgres import fresh_schema, postgres_database

__all__ = ["postgres_database"]

SCALE = 20.0
"""Tier 3's 50 a minute become 50 every 3 s."""
CHANNELS = ("CBUDGET0", "CBUDGET1", "CBUDGET2", "CBUDGET3")
WAIT_S = 30.0


@dataclass
class PacedModel:
    """Answers ``<words of the mention>: w1 w2 …`` one word every ``every`` seconds."""

    words: int
    every: float
    name: str = "paced"
    label: str = "paced test model"
    requests: list[ModelRequest] = field(default_factory=list)

    @staticmethod
    def answer(tag: str, words: int) -> str:
        return f"{tag}:" + "".join(f" w{i}" for i in range(words))

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelPiece]:
        self.requests.append(request)
        tag = next(m.text for m in reversed(request.messages) if isinstance(m, UserMessage))
        yield TextPiece(f"{tag}:")
        for i in range(self.words):
            await asyncio.sleep(self.every)  # the model's pace, not a wait for an outcome
            yield TextPiece(f" w{i}")
        yield UsagePiece(Usage(prompt_tokens=5, completion_tokens=self.words))
        yield FinishPiece("stop")

    async def aclose(self) -> None:
        return None


@asynccontextmanager
async def two_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str, words: int
) -> AsyncIterator[tuple[FakeSlack, list[PacedModel]]]:
    for name in PLATFORM_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    fake = FakeSlack(time_scale=SCALE)
    fake.socket.spread = True
    for n, channel in enumerate(CHANNELS):
        fake.add_channel(channel, f"budget-{n}")
    await fake.start()
    models = [PacedModel(words, 0.02), PacedModel(words, 0.02)]
    async with AsyncExitStack() as stack:
        stack.push_async_callback(fake.stop)
        for n, model in enumerate(models):
            settings, platforms = configure(
                data_dir=tmp_path / f"worker{n}",
                http_port=0,
                playground=False,
                database_url=url,
                worker_id=f"worker{n}",
                **fake.settings(),
                slack_edits_per_minute=48.0 * SCALE,
                slack_min_edit_interval=1.0 / SCALE,
                slack_streaming="edit",
            )
            runtime = Runtime(settings, platforms=platforms, model=model)
            await runtime.start()
            stack.push_async_callback(runtime.stop)
        yield fake, models


async def mention(fake: FakeSlack, threads: int) -> dict[str, Message]:
    roots = {}
    for n in range(threads):
        tag = f"thread{n:02d}"
        roots[tag] = await fake.say("UADA", CHANNELS[n % len(CHANNELS)], f"{MENTION} {tag}")
    return roots


def answered(fake: FakeSlack, roots: dict[str, Message], words: int) -> bool:
    """Every thread shows its whole answer, once."""
    return all(
        [m.shown for m in fake.replies(root.channel, root.ts)] == [PacedModel.answer(tag, words)]
        for tag, root in roots.items()
    )


async def test_two_workers_streaming_in_many_threads_keep_within_the_workspace_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_database: str
) -> None:
    url = await fresh_schema(postgres_database)
    words = 120  # about 2.4 s of streaming in every thread: most of a 3 s window
    async with two_workers(tmp_path, monkeypatch, url, words) as (fake, models):
        roots = await mention(fake, 8)
        await fake.wait_for(lambda: answered(fake, roots, words), WAIT_S)
        updates = [c.at for c in fake.api.calls if c.method == "chat.update"]
    assert all(model.requests for model in models)  # both workers answered threads
    assert fake.limits.rejected["chat.update"] == 0
    assert (
        fake.limits.rejected["chat.delete"] == 0
    )  # drafts of finals posted anew: paced together too
    assert len(updates) > len(roots)  # replies were streamed, not posted whole
    window = 60.0 / SCALE
    busiest = max(sum(1 for t in updates if start <= t < start + window) for start in updates)
    assert busiest <= 50


async def test_a_429_on_one_worker_pauses_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_database: str
) -> None:
    url = await fresh_schema(postgres_database)
    words = 150
    pause = 0.5
    async with two_workers(tmp_path, monkeypatch, url, words) as (fake, models):
        roots = await mention(fake, 8)
        await fake.wait_for(lambda: all(model.requests for model in models), WAIT_S)
        await fake.wait_for(lambda: fake.count("chat.update") >= 10, WAIT_S)  # both streaming
        fake.limits.storm("chat.update", 1, retry_after=pause)
        await fake.wait_for(lambda: fake.limits.rejected["chat.update"] == 1, WAIT_S)
        await fake.wait_for(lambda: answered(fake, roots, words), WAIT_S)
    limited = next(c.at for c in fake.api.calls if c.outcome == "ratelimited")
    during = [
        c
        for c in fake.api.calls
        if c.method == "chat.update" and limited + 0.05 < c.at < limited + pause
    ]
    assert during == []  # neither worker edited while the workspace was paused
    assert fake.limits.rejected["chat.update"] == 1
    assert fake.limits.violations["chat.update"] == 0
