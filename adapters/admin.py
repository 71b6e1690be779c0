"""``threadline audit`` and ``threadline rules``: what an operator asks of the approval records.

``audit`` prints every approval request, decision, expiry and "Always allow" rule (who, when,
tool, hash of the arguments, outcome), oldest first, optionally for one thread or channel (a
key or its first parts, matched part by part: ``slack:T1:C1`` is not ``slack:T1:C10``) and since
a time. ``rules`` lists the "Always allow here" rules, of every channel or one, and revokes one.
``feedback`` prints the 👍 / 👎 people gave the answers (one per run and person, the last click
winning), oldest first, as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # ``threadline --help`` builds the parser from this module: it stays light
    from bot.approvals.models import AuditEntry
    from bot.config import Settings
    from bot.feedback.model import Feedback

_AGO = re.compile(r"^(\d+)\s*([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
OPERATOR = "operator"


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    audit = sub.add_parser("audit", help="print the approval audit trail")
    audit.add_argument(
        "--thread", default="", help="only this thread key, or the threads under its first parts"
    )
    audit.add_argument(
        "--since", default=None, help="an ISO date or time (UTC), or 30m, 12h, 7d ago"
    )
    audit.add_argument("--limit", type=int, default=1000, help="print at most this many records")
    feedback = sub.add_parser("feedback", help="print the 👍 / 👎 on answers as JSON lines")
    feedback.add_argument(
        "--since", default=None, help="an ISO date or time (UTC), or 30m, 12h, 7d ago"
    )
    feedback.add_argument("--limit", type=int, default=10_000, help="print at most this many")
    rules = sub.add_parser("rules", help='list the "Always allow here" rules, or revoke one')
    rules.add_argument(
        "--channel", default="", help="only rules of this channel key, or under its first parts"
    )
    rules.add_argument(
        "--revoke", metavar="RULE_ID", default=None, help="remove this rule (its id as listed)"
    )


def parse_since(text: str | None, now: float) -> float:
    """``None`` → the beginning; ``12h`` → twelve hours ago; an ISO date or time (UTC)."""
    if not text:
        return 0.0
    if (match := _AGO.match(text.strip())) is not None:
        return now - int(match.group(1)) * _UNITS[match.group(2)]
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"--since {text!r}: give an ISO date or time, or 30m, 12h, 7d") from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def line(entry: AuditEntry) -> str:
    at = datetime.fromtimestamp(entry.at, UTC).strftime("%Y-%m-%d %H:%M:%S")
    who = f"{entry.actor_name} ({entry.actor_id})" if entry.actor_id else entry.actor_name or "-"
    parts = [at, entry.key, entry.event, entry.tool, who]
    if entry.args_hash:
        parts.append(f"args sha256 {entry.args_hash[:16]}")
    if entry.detail:
        parts.append(entry.detail)
    return "  ".join(parts)


async def run_audit(settings: Settings, args: argparse.Namespace) -> int:
    from bot.storage.choose import store_for

    since = parse_since(args.since, time.time())
    store = store_for(settings)
    await store.open()
    try:
        entries = await store.audit_trail(within=args.thread, since=since, limit=args.limit)
    finally:
        await store.close()
    for entry in entries:
        print(line(entry))
    if not entries:
        print("no approval records match")
    return 0


async def run_rules(settings: Settings, args: argparse.Namespace) -> int:
    from bot.storage.choose import store_for

    store = store_for(settings)
    await store.open()
    try:
        if args.revoke:
            rule = await store.revoke_allow_rule(args.revoke, OPERATOR, OPERATOR, time.time())
            if rule is None:
                print(f"no rule {args.revoke}")
                return 1
            print(f"revoked {rule.id}: {rule.describe()}")
            return 0
        rules = await store.allow_rules(within=args.channel)
    finally:
        await store.close()
    for rule in rules:
        when = datetime.fromtimestamp(rule.created_at, UTC).strftime("%Y-%m-%d %H:%M")
        print(f"{rule.id}  {rule.describe()}, {when} UTC")
    if not rules:
        print('no "Always allow here" rules')
    return 0


def feedback_line(given: Feedback) -> str:
    """One JSON object: when (ISO, UTC), the thread, the run, who, 👍 ``up`` or 👎 ``down``, and
    what went wrong in their words."""
    return json.dumps(
        {
            "at": datetime.fromtimestamp(given.at, UTC).isoformat(timespec="seconds"),
            "thread": given.key,
            "run": given.run_id,
            "user_id": given.user_id,
            "user": given.user_name,
            "value": given.value,
            "note": given.note,
        },
        ensure_ascii=False,
    )


async def run_feedback(settings: Settings, args: argparse.Namespace) -> int:
    from bot.storage.choose import store_for

    since = parse_since(args.since, time.time())
    if args.limit < 1:
        raise ValueError("--limit: give a number of records, 1 or more")
    store = store_for(settings)
    await store.open()
    try:
        given = await store.feedback_since(since, args.limit)
    finally:
        await store.close()
    for one in given:
        print(feedback_line(one))
    return 0
