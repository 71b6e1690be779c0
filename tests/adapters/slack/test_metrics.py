"""``/metrics`` after a real conversation on the fake Slack: a run that pauses for an approval,
a click, the tool, a 429 — each counted once, under bounded labels (no thread, channel or user
id anywhere)."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.adapters.slack.conftest import World, slack_world
from tests.fakes.scripted_model import ScriptedModel, call, step, text
from tests.fakes.slack import MENTION, Message

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
LABELS = {
    "threadline_runs_started_total": set(),
    "threadline_runs_finished_total": {"outcome"},
    "threadline_model_calls_total": {"outcome"},
    "threadline_model_call_seconds": {"outcome"},
    "threadline_model_first_piece_seconds": set(),
    "threadline_model_tokens_total": {"kind"},
    "threadline_tool_calls_total": {"tool", "outcome"},
    "threadline_tool_call_seconds": {"tool"},
    "threadline_approvals_requested_total": set(),
    "threadline_approvals_decided_total": {"decision"},
    "threadline_approvals_expired_total": set(),
    "threadline_platform_requests_total": {"platform", "method", "outcome"},
    "threadline_platform_rate_limited_total": {"platform", "method"},
    "threadline_platform_request_seconds": {"platform", "method"},
    "threadline_edits_total": {"platform", "priority"},
    "threadline_edits_waiting": {"platform"},
    "threadline_edit_wait_seconds": {"platform"},
    "threadline_edit_budget_per_minute": {"platform"},
    "threadline_turns_waiting": set(),
    "threadline_shared_edit_budget_calls_total": {"outcome"},
    "threadline_store_calls_total": {"statement"},
    "threadline_store_round_trips_total": {"statement"},
    "threadline_feedback_total": {"value"},
}
"""Every metric of ours and its label names (a histogram's ``le`` aside)."""


def _series(family: str) -> set[str]:
    """The sample names of a family: ``_total``/``_created`` of a counter, a histogram's parts."""
    base = family.removesuffix("_total")
    return {family, f"{base}_created", *(f"{base}_{part}" for part in ("bucket", "count", "sum"))}


async def scrape(world: World, **headers: str) -> tuple[int, str]:
    assert world.runtime is not None
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{world.runtime.url}/metrics", headers=headers) as response,
    ):
        return response.status, await response.text()


def samples(exposition: str) -> Samples:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(exposition)
        for s in family.samples
    }


def value(found: Samples, name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


async def test_a_conversation_with_an_approval_is_counted_under_bounded_labels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedModel(
        [
            step(call("write_file", {"path": "notes.md", "content": "hello"})),
            text("Written."),
        ]
    )
    settings = {"workspace_tools": True, "tools": {"write_file": {"approval": "always"}}}
    async with slack_world(tmp_path, monkeypatch, model=model, **settings) as world:
        status, before_text = await scrape(world)
        assert status == 200
        before = samples(before_text)
        world.fake.limits.storm("chat.postMessage", 1, retry_after=0.1)
        root = await world.fake.say("UADA", "CGENERAL", f"{MENTION} write the notes")

        def cards() -> list[Message]:
            return [
                m
                for m in world.fake.replies("CGENERAL", root.ts)
                if m.buttons and "notes.md" in m.shown
            ]

        await world.fake.wait_for(lambda: bool(cards()), 30)
        await world.idle()
        await world.fake.click("UADA", cards()[0], "Approve")
        await world.fake.wait_for(
            lambda: any(m.shown == "Written." for m in world.fake.replies("CGENERAL", root.ts)), 30
        )
        await world.idle()
        assert world.runtime is not None
        await world.runtime.core.wait_idle()
        status, after_text = await scrape(world)
        after = samples(after_text)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("threadline_runs_started_total") == 2  # the first run paused; the click resumed it
    assert grew("threadline_runs_finished_total", outcome="paused") == 1
    assert grew("threadline_runs_finished_total", outcome="completed") == 1
    assert grew("threadline_model_calls_total", outcome="ok") == 2
    assert grew("threadline_model_call_seconds_count", outcome="ok") == 2
    assert grew("threadline_model_tokens_total", kind="prompt") == 20
    assert grew("threadline_approvals_requested_total") == 1
    assert grew("threadline_approvals_decided_total", decision="approved") == 1
    assert grew("threadline_tool_calls_total", tool="write_file", outcome="ok") == 1
    slack = {"platform": "slack"}
    assert grew("threadline_platform_rate_limited_total", **slack, method="chat.postMessage") == 1
    assert (
        grew(
            "threadline_platform_requests_total",
            **slack,
            method="chat.postMessage",
            outcome="rate_limited",
        )
        == 1
    )
    assert (
        grew("threadline_platform_requests_total", **slack, method="chat.postMessage", outcome="ok")
        >= 2
    )
    assert (
        grew("threadline_platform_requests_total", **slack, method="chat.update", outcome="ok") >= 1
    )  # the card
    assert value(after, "threadline_edit_budget_per_minute", **slack) == 6000.0
    assert value(after, "threadline_turns_waiting") == 0

    ours = {name: labels for (name, labels) in after if name.startswith("threadline_")}
    for name, labels in ours.items():
        family = next(f for f in LABELS if name in _series(f))
        assert {k for k, _ in labels} - {"le"} == LABELS[family], name
    shown = " ".join(v for labels in ours.values() for _, v in labels)
    for identifier in ("CGENERAL", "UADA", "T0FAKE", root.ts, "notes.md"):
        assert identifier not in shown


async def test_a_metrics_token_keeps_others_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with slack_world(tmp_path, monkeypatch, metrics_token="s3cret-scrape") as world:
        assert (await scrape(world))[0] == 401
        assert (await scrape(world, Authorization="Bearer wrong"))[0] == 401
        status, body = await scrape(world, Authorization="Bearer s3cret-scrape")
        assert status == 200 and "threadline_runs_started_total" in body
