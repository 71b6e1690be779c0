"""``threadline audit`` and ``threadline rules`` on a data directory, as an operator runs them."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.admin import parse_since
from bot.api.inbound import ThreadKey
from bot.approvals.models import (
    AllowRule,
    ApprovalRequest,
    ApprovalStatus,
    Approvers,
    AuditEntry,
)
from bot.storage.sqlite.store import SqliteStore
from tests.adapters.test_cli import threadline

KEY = ThreadKey("slack:T1:C1:1700000000.000100")


async def records(data: Path) -> None:
    store = SqliteStore(data / "threadline.sqlite3")
    await store.open()
    try:
        await store.create_approval(
            ApprovalRequest(
                id="a1",
                key=KEY,
                call_id="c1",
                tool="run_command",
                arguments='{"command": "ls"}',
                args_hash="f" * 64,
                requester_id="slack:U1",
                requester_name="Alice",
                approvers=Approvers(),
                created_at=1_700_000_000.0,
                expires_at=1_700_001_800.0,
            )
        )
        await store.decide_approval(
            "a1", ApprovalStatus.APPROVED, "slack:U1", "Alice", 1_700_000_060.0
        )
        await store.add_allow_rule(
            AllowRule(
                "rule1",
                "slack:T1:C1",
                "deploy",
                frozenset({"slack:U1"}),
                "slack:U1",
                "Alice",
                1_700_000_100.0,
            )
        )
    finally:
        await store.close()


async def test_audit_prints_who_decided_what_and_when(tmp_path: Path) -> None:
    await records(tmp_path / "data")
    env = {"THREADLINE_DATA_DIR": str(tmp_path / "data")}
    out = threadline("audit", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 3
    assert (
        "2023-11-14 22:13:20" in lines[0] and "requested" in lines[0] and "run_command" in lines[0]
    )
    assert "Alice (slack:U1)" in lines[0] and "args sha256 ffffffffffffffff" in lines[0]
    assert "approved" in lines[1] and "rule created" in lines[2]
    assert threadline("audit", "--thread", "discord:", env=env, cwd=tmp_path).stdout.strip() == (
        "no approval records match"
    )
    later = threadline("audit", "--since", "2023-11-14T22:14:30", env=env, cwd=tmp_path)
    assert [ln.split("  ")[2] for ln in later.stdout.splitlines()] == ["rule created"]
    bad = threadline("audit", "--since", "yesterday", env=env, cwd=tmp_path)
    assert bad.returncode == 2 and "--since" in bad.stderr


async def test_rules_are_listed_and_revoked(tmp_path: Path) -> None:
    await records(tmp_path / "data")
    env = {"THREADLINE_DATA_DIR": str(tmp_path / "data")}
    listed = threadline("rules", env=env, cwd=tmp_path)
    assert (
        listed.returncode == 0
        and "rule1  deploy in slack:T1:C1 for slack:U1 (by Alice)" in listed.stdout
    )
    revoked = threadline("rules", "--revoke", "rule1", env=env, cwd=tmp_path)
    assert revoked.returncode == 0 and "revoked rule1" in revoked.stdout
    assert threadline("rules", "--revoke", "rule1", env=env, cwd=tmp_path).returncode == 1
    assert 'no "Always allow here" rules' in threadline("rules", env=env, cwd=tmp_path).stdout
    trail = threadline("audit", env=env, cwd=tmp_path).stdout
    assert "rule revoked" in trail and "operator" in trail


async def test_a_channel_lists_its_own_rules_and_records_not_those_of_a_longer_name(
    tmp_path: Path,
) -> None:
    general, generalx = "slack:T1:C0GENERAL", "slack:T1:C0GENERALX"
    store = SqliteStore(tmp_path / "data" / "threadline.sqlite3")
    await store.open()
    try:
        for n, scope in enumerate([generalx, general], start=1):
            await store.add_allow_rule(
                AllowRule(f"rule{n}", scope, "deploy", frozenset({"slack:U1"}), "slack:U1", "A", n)
            )
        for n, key in enumerate([f"{generalx}:1.1", f"{general}:2.2"], start=10):
            await store.record_audit(AuditEntry(n, key, "allowed by rule", "deploy", "h", "u", "U"))
    finally:
        await store.close()
    env = {"THREADLINE_DATA_DIR": str(tmp_path / "data")}

    def listed(*args: str) -> list[str]:
        out = threadline(*args, env=env, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        return out.stdout.splitlines()

    [rule] = listed("rules", "--channel", general)
    assert rule.startswith("rule2  deploy in slack:T1:C0GENERAL for")
    assert [ln.split()[0] for ln in listed("rules", "--channel", generalx)] == ["rule1"]
    assert listed("rules", "--channel", "slack:T1:C0GEN") == ['no "Always allow here" rules']
    keys = [ln.split("  ")[1] for ln in listed("audit", "--thread", general, "--limit", "2")]
    assert keys == [general, f"{general}:2.2"]  # its rule, then its thread
    assert [ln.split("  ")[1] for ln in listed("audit", "--thread", f"{general}:2.2")] == [
        f"{general}:2.2"
    ]


def test_since_accepts_durations_and_dates() -> None:
    assert parse_since("30m", 10_000.0) == 10_000.0 - 1800
    assert parse_since("2d", 200_000.0) == 200_000.0 - 172_800
    assert parse_since("1970-01-02", 0.0) == 86_400.0
    assert parse_since(None, 5.0) == 0.0
    with pytest.raises(ValueError, match="--since"):
        parse_since("soon", 0.0)


async def test_feedback_is_printed_as_json_lines_since_a_time(tmp_path: Path) -> None:
    import json

    from bot.feedback.model import Feedback

    store = SqliteStore(tmp_path / "data" / "threadline.sqlite3")
    await store.open()
    try:
        await store.record_feedback(Feedback("r1", KEY, "slack:U1", "Alice", "up", 1_700_000_000.0))
        await store.record_feedback(Feedback("r2", KEY, "slack:U2", "Bob", "down", 1_700_000_600.0))
        await store.note_feedback("r2", "slack:U2", 'wrong "flag" — twice')
    finally:
        await store.close()
    env = {"THREADLINE_DATA_DIR": str(tmp_path / "data")}
    out = threadline("feedback", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines[1] == {
        "at": "2023-11-14T22:23:20+00:00",
        "thread": KEY,
        "run": "r2",
        "user_id": "slack:U2",
        "user": "Bob",
        "value": "down",
        "note": 'wrong "flag" — twice',
    }
    assert lines[0]["value"] == "up" and lines[0]["note"] == ""
    later = threadline("feedback", "--since", "2023-11-14T22:20:00", env=env, cwd=tmp_path)
    assert [json.loads(line)["run"] for line in later.stdout.splitlines()] == ["r2"]
    bad = threadline("feedback", "--since", "last week", env=env, cwd=tmp_path)
    assert bad.returncode == 2 and "--since" in bad.stderr and not bad.stdout
