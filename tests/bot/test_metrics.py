"""The metrics' own bookkeeping: turns waiting in a thread's line, a model stream's outcome, a
run's outcome when it raises (read from the registry, as ``/metrics`` shows it)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from bot.errors import ContextOverflow, ModelRateLimited
from bot.infra import metrics
from bot.llm.messages import Usage
from bot.llm.model import ModelPiece, TextPiece, UsagePiece
from bot.thread.line import ThreadLocks


def read(name: str, **labels: str) -> float:
    return metrics.REGISTRY.get_sample_value(name, labels) or 0.0


async def test_turns_waiting_counts_places_behind_the_holder_and_forgets_those_that_leave() -> None:
    base = read("threadline_turns_waiting")
    locks: ThreadLocks[str] = ThreadLocks()
    first, second, third = locks.reserve("a"), locks.reserve("a"), locks.reserve("a")
    other = locks.reserve("b")  # its own line: holds at once
    assert read("threadline_turns_waiting") == base + 2
    second.cancel()  # gave up its place without holding the key
    assert read("threadline_turns_waiting") == base + 1
    async with first:
        pass
    assert read("threadline_turns_waiting") == base  # the third holds the key now
    async with third:
        pass
    other.cancel()
    assert read("threadline_turns_waiting") == base and len(locks) == 0


async def _pieces(*pieces: ModelPiece, fail: Exception | None = None) -> AsyncIterator[ModelPiece]:
    for piece in pieces:
        yield piece
    if fail is not None:
        raise fail


@pytest.mark.parametrize(
    ("fail", "outcome"),
    [
        (None, "ok"),
        (ContextOverflow("too long"), "context_overflow"),
        (ModelRateLimited("slow down"), "rate_limited"),
    ],
)
async def test_a_model_stream_is_counted_by_outcome_with_its_tokens(
    fail: Exception | None, outcome: str
) -> None:
    calls = read("threadline_model_calls_total", outcome=outcome)
    timed = read("threadline_model_call_seconds_count", outcome=outcome)
    prompt = read("threadline_model_tokens_total", kind="prompt")
    stream = _pieces(
        TextPiece("hi"), UsagePiece(Usage(prompt_tokens=7, completion_tokens=2)), fail=fail
    )
    got: list[ModelPiece] = []
    try:
        async for piece in metrics.metered(stream):
            got.append(piece)
    except (ContextOverflow, ModelRateLimited):
        assert fail is not None
    assert got[0] == TextPiece("hi")  # the pieces pass unchanged
    assert read("threadline_model_calls_total", outcome=outcome) == calls + 1
    assert read("threadline_model_call_seconds_count", outcome=outcome) == timed + 1
    assert read("threadline_model_tokens_total", kind="prompt") == prompt + 7


async def test_a_run_that_raises_is_counted_as_an_error_and_a_cancelled_one_as_cancelled() -> None:
    error, cancelled = (
        read("threadline_runs_finished_total", outcome=o) for o in ("error", "cancelled")
    )
    with pytest.raises(RuntimeError), metrics.counted_run():
        raise RuntimeError("a bug")
    with pytest.raises(asyncio.CancelledError), metrics.counted_run():
        raise asyncio.CancelledError
    assert read("threadline_runs_finished_total", outcome="error") == error + 1
    assert read("threadline_runs_finished_total", outcome="cancelled") == cancelled + 1
    assert metrics.outcome_of(ok=False, paused=False, stopped=True) == "stopped"
    assert metrics.outcome_of(ok=False, paused=False, stopped=False) == "failed"


async def test_edits_granted_by_a_budget_are_counted_by_platform_and_priority() -> None:
    from bot.infra.clock import ManualClock
    from bot.present.budget import EditBudget, Priority

    budget = EditBudget(ManualClock(start=0.0), None, platform="slack")
    final, interim = (
        read("threadline_edits_total", platform="slack", priority=p) for p in ("final", "interim")
    )
    await budget.acquire(object(), Priority.FINAL)
    await budget.acquire(object())
    assert read("threadline_edits_total", platform="slack", priority="final") == final + 1
    assert read("threadline_edits_total", platform="slack", priority="interim") == interim + 1
