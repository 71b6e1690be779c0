"""The process's metrics, in Prometheus' format (the one home of ``prometheus_client``).

Every metric is declared here, in one registry of our own (no other library's metrics leak in),
and counted from the few places things happen: a run in the supervisor, a model call and a
tool call in the engine, an approval in its service, an edit in the edit budget, a turn in the
thread's line, and every platform HTTP call in the adapters' API layer. The runtime serves
:func:`exposition` at ``/metrics``.

Label values are bounded by what the code or the configuration names (outcomes, tool names,
platforms, API methods and route templates), never a thread, channel or user id: a thread is
not a time series.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import choose_encoder
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from bot.errors import (
    ContextOverflow,
    ModelRateLimited,
    ModelRejected,
    ModelServerError,
    ModelStreamBroken,
    ModelUnavailable,
)
from bot.llm.model import ModelPiece, UsagePiece, WaitPiece

REGISTRY = CollectorRegistry()
ProcessCollector(registry=REGISTRY)  # CPU seconds, memory, open files: read when scraped
PlatformCollector(registry=REGISTRY)
GCCollector(registry=REGISTRY)

_LATENCY = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
_QUICK = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

RUNS_STARTED = Counter(
    "threadline_runs_started",
    "Runs of the agent started (a new message or a resumed run).",
    registry=REGISTRY,
)
RUNS_FINISHED = Counter(
    "threadline_runs_finished",
    "Runs of the agent that ended, by outcome: completed, paused (waits for an approval), "
    "stopped (a Stop), failed (the model failed or a limit was reached), cancelled (shutdown), "
    "error (a bug).",
    ["outcome"],
    registry=REGISTRY,
)
MODEL_CALLS = Counter(
    "threadline_model_calls",
    "Streamed model requests, by outcome.",
    ["outcome"],
    registry=REGISTRY,
)
MODEL_SECONDS = Histogram(
    "threadline_model_call_seconds",
    "From sending a model request to the end of its stream.",
    ["outcome"],
    buckets=_LATENCY,
    registry=REGISTRY,
)
MODEL_FIRST_PIECE = Histogram(
    "threadline_model_first_piece_seconds",
    "From sending a model request to its first streamed piece (text or tool call).",
    buckets=_LATENCY,
    registry=REGISTRY,
)
MODEL_TOKENS = Counter(
    "threadline_model_tokens",
    "Tokens the model server reported, by kind (prompt, completion).",
    ["kind"],
    registry=REGISTRY,
)
TOOL_CALLS = Counter(
    "threadline_tool_calls",
    "Tool calls that ran, by tool and outcome (ok, error).",
    ["tool", "outcome"],
    registry=REGISTRY,
)
TOOL_SECONDS = Histogram(
    "threadline_tool_call_seconds",
    "How long tool calls ran, by tool.",
    ["tool"],
    buckets=_QUICK,
    registry=REGISTRY,
)
APPROVALS_REQUESTED = Counter(
    "threadline_approvals_requested",
    "Tool calls that began waiting for a person's approval.",
    registry=REGISTRY,
)
APPROVALS_DECIDED = Counter(
    "threadline_approvals_decided",
    "Approval requests decided by a click, by decision.",
    ["decision"],
    registry=REGISTRY,
)
APPROVALS_EXPIRED = Counter(
    "threadline_approvals_expired",
    "Approval requests that expired (nobody decided in time, a reset, a repair).",
    registry=REGISTRY,
)
PLATFORM_REQUESTS = Counter(
    "threadline_platform_requests",
    "HTTP requests to Slack's Web API or Discord's REST API, by platform, method and outcome "
    "(ok, rate_limited, client_error, server_error, failed).",
    ["platform", "method", "outcome"],
    registry=REGISTRY,
)
PLATFORM_RATE_LIMITED = Counter(
    "threadline_platform_rate_limited",
    "Platform answers 429 (rate limited), by method.",
    ["platform", "method"],
    registry=REGISTRY,
)
PLATFORM_SECONDS = Histogram(
    "threadline_platform_request_seconds",
    "How long platform requests took, by method.",
    ["platform", "method"],
    buckets=_QUICK,
    registry=REGISTRY,
)
EDITS = Counter(
    "threadline_edits",
    "Message edits and posts the edit budget let through, by priority.",
    ["platform", "priority"],
    registry=REGISTRY,
)
EDITS_WAITING = Gauge(
    "threadline_edits_waiting",
    "Edits waiting for the edit budget now.",
    ["platform"],
    registry=REGISTRY,
)
EDIT_WAIT_SECONDS = Histogram(
    "threadline_edit_wait_seconds",
    "How long an edit waited for the edit budget.",
    ["platform"],
    buckets=_QUICK,
    registry=REGISTRY,
)
EDIT_BUDGET = Gauge(
    "threadline_edit_budget_per_minute",
    "The edit budget (edits a minute) of each platform that has one.",
    ["platform"],
    registry=REGISTRY,
)
SHARED_BUDGET_CALLS = Counter(
    "threadline_shared_edit_budget_calls",
    "Calls to the database for slots of an edit budget shared by workers: granted (a slot or"
    " more), later (none within reach yet), failed (no answer: the worker paces locally).",
    ["outcome"],
    registry=REGISTRY,
)
FEEDBACK = Counter(
    "threadline_feedback",
    "👍 (up) and 👎 (down) on final answers: a person's first click on an answer, and a "
    "click that changes it (the same click again counts nothing).",
    ["value"],
    registry=REGISTRY,
)
STORE_CALLS = Counter(
    "threadline_store_calls",
    "Calls of the PostgreSQL store's statements that every run makes, by statement.",
    ["statement"],
    registry=REGISTRY,
)
STORE_ROUND_TRIPS = Counter(
    "threadline_store_round_trips",
    "Round trips those calls took, by statement: calls made while the statement's previous batch"
    " was in flight go together, as one (calls / round trips: the batch size).",
    ["statement"],
    registry=REGISTRY,
)
TURNS_WAITING = Gauge(
    "threadline_turns_waiting",
    "Messages, scheduled prompts and resumed runs waiting for their thread's current run to end.",
    registry=REGISTRY,
)

_MODEL_ERRORS: tuple[tuple[type[BaseException], str], ...] = (
    (ContextOverflow, "context_overflow"),
    (ModelRateLimited, "rate_limited"),
    (ModelServerError, "server_error"),
    (ModelUnavailable, "unavailable"),
    (ModelRejected, "rejected"),
    (ModelStreamBroken, "stream_broken"),
)


def exposition(accept: str = "") -> tuple[bytes, str]:
    """The current values and their content type, in the format the ``Accept`` header asks for
    (Prometheus' text format 0.0.4 unless it asks for OpenMetrics or a later text format)."""
    encode, content_type = choose_encoder(accept)
    return encode(REGISTRY), content_type


# --- runs -----------------------------------------------------------------------------------


@dataclass(slots=True)
class RunCount:
    outcome: str = "completed"


@contextmanager
def counted_run() -> Iterator[RunCount]:
    """``with counted_run() as run: ...; run.outcome = outcome_of(result, stopped=...)``."""
    RUNS_STARTED.inc()
    run = RunCount()
    try:
        yield run
    except BaseException as exc:
        run.outcome = "error" if isinstance(exc, Exception) else "cancelled"
        raise
    finally:
        RUNS_FINISHED.labels(run.outcome).inc()


def outcome_of(*, ok: bool, paused: bool, stopped: bool) -> str:
    """The outcome label of a run that returned."""
    if stopped:
        return "stopped"
    if paused:
        return "paused"
    return "completed" if ok else "failed"


# --- the model ------------------------------------------------------------------------------


async def metered(stream: AsyncIterator[ModelPiece]) -> AsyncIterator[ModelPiece]:
    """``stream``'s pieces, unchanged; its latency, outcome and tokens are counted."""
    began = time.perf_counter()
    first = True
    outcome = "ok"
    try:
        async for piece in stream:
            if first and not isinstance(piece, WaitPiece):  # the first piece of the answer
                MODEL_FIRST_PIECE.observe(time.perf_counter() - began)
                first = False
            if isinstance(piece, UsagePiece):
                MODEL_TOKENS.labels("prompt").inc(piece.usage.prompt_tokens)
                MODEL_TOKENS.labels("completion").inc(piece.usage.completion_tokens)
            yield piece
    except BaseException as exc:
        outcome = next((n for kind, n in _MODEL_ERRORS if isinstance(exc, kind)), None) or (
            "error" if isinstance(exc, Exception) else "cancelled"
        )
        raise
    finally:
        MODEL_CALLS.labels(outcome).inc()
        MODEL_SECONDS.labels(outcome).observe(time.perf_counter() - began)
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()


# --- tools and approvals --------------------------------------------------------------------


def tool_ran(tool: str, *, is_error: bool, began: float) -> None:
    """A tool call that ran ended; ``began`` is :func:`time.perf_counter` at its start."""
    TOOL_CALLS.labels(tool, "error" if is_error else "ok").inc()
    TOOL_SECONDS.labels(tool).observe(time.perf_counter() - began)


def approval_decided(decision: str) -> None:
    """``approved``, ``denied`` or ``expired``."""
    if decision == "expired":
        APPROVALS_EXPIRED.inc()
    else:
        APPROVALS_DECIDED.labels(decision).inc()


# --- platforms ------------------------------------------------------------------------------


def platform_request(platform: str, method: str, status: int | None, seconds: float) -> None:
    """One HTTP request to a platform answered ``status`` (None: no answer) after ``seconds``."""
    if status is None:
        outcome = "failed"
    elif status == 429:
        outcome = "rate_limited"
        PLATFORM_RATE_LIMITED.labels(platform, method).inc()
    elif status >= 500:
        outcome = "server_error"
    elif status >= 400:
        outcome = "client_error"
    else:
        outcome = "ok"
    PLATFORM_REQUESTS.labels(platform, method, outcome).inc()
    PLATFORM_SECONDS.labels(platform, method).observe(seconds)


def feedback_given(value: str) -> None:
    FEEDBACK.labels(value=value).inc()


def shared_budget_call(outcome: str) -> None:
    """One call for slots of a shared edit budget: ``granted``, ``later`` or ``failed``."""
    SHARED_BUDGET_CALLS.labels(outcome).inc()


def store_round_trip(statement: str, calls: int) -> None:
    """One round trip of the store's gathered ``statement``, for ``calls`` calls."""
    STORE_CALLS.labels(statement).inc(calls)
    STORE_ROUND_TRIPS.labels(statement).inc()
