"""When a scheduled prompt runs: ``when`` as people and models write it, read into its first run
and, for a recurring prompt, its cron expression.

Accepted forms:

- a relative time: ``in 5 seconds``, ``in 10 minutes``, ``in 2 hours``, ``in 3 days``,
  ``in an hour`` (units may be shortened: ``s``, ``sec``, ``min``, ``h``, ``hr``, ``d``, ``w``);
- an ISO 8601 time: ``2026-05-01T09:00`` (in the configured zone), ``2026-05-01T09:00+02:00``,
  ``2026-05-01T07:00Z``;
- a five-field cron expression, ``minute hour day-of-month month day-of-week`` (``0 9 * * 1-5``:
  weekdays at 9:00), read in the configured zone. Sunday is 0 (or 7), as in crontab.

croniter (kept by the Apache Airflow maintainers) computes the cron times, here and nowhere else.
APScheduler stays the timer only: its own cron trigger numbers weekdays from Monday, so
``1-5`` would silently mean Tuesday to Saturday.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import CroniterError, croniter

from bot.errors import Refused

MAX_AHEAD_S = 366 * 86400.0
"""A one-off prompt runs within a year."""
GAPS_CHECKED = 24
"""Occurrences of a cron expression checked for the minimum interval between runs."""
_UNITS = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3600),
    **dict.fromkeys(("d", "day", "days"), 86400),
    **dict.fromkeys(("w", "wk", "week", "weeks"), 7 * 86400),
}
_RELATIVE = re.compile(r"^(?:in\s+)?(\d+(?:\.\d+)?|an?|one)\s*([a-z]+)$")
_CRON_FIELD = re.compile(r"^[0-9A-Za-z*/,?#-]+$")


@dataclass(frozen=True, slots=True)
class Timing:
    first_at: float
    """When it runs first (seconds since the epoch)."""
    cron: str | None = None
    """A recurring prompt's expression; None: it runs once."""


def accepted_forms(zone: ZoneInfo) -> str:
    return (
        'Accepted forms: a relative time ("in 5 seconds", "in 10 minutes", "in 2 hours", '
        f'"in 3 days"); an ISO 8601 time ("2026-05-01T09:00", read in {zone.key}, or with a '
        'zone: "2026-05-01T09:00+02:00"); or a five-field cron expression for a recurring prompt '
        f'("0 9 * * 1-5": minute hour day-of-month month day-of-week, in {zone.key}).'
    )


def read_when(text: str, now: float, zone: ZoneInfo, *, min_interval_s: float = 60.0) -> Timing:
    """``text`` as a :class:`Timing` after ``now``; :class:`Refused` says what is wrong and which
    forms are accepted."""
    cleaned = " ".join(text.strip().lower().split())
    if not cleaned:
        raise Refused(f"when is empty. {accepted_forms(zone)}")
    relative = _RELATIVE.match(cleaned)
    if relative is not None and relative.group(2) in _UNITS:
        return Timing(_ahead(relative.group(1), relative.group(2), now, text, zone))
    fields = text.split()
    if len(fields) == 5 and all(_CRON_FIELD.match(f) for f in fields):
        return _cron(" ".join(fields), now, zone, min_interval_s)
    return Timing(_iso(text.strip(), now, zone))


def next_run(cron: str, zone: ZoneInfo, after: float) -> float | None:
    """The first time ``cron`` fires after ``after``; None if it never does."""
    try:
        found = croniter(cron, datetime.fromtimestamp(after, zone)).get_next(datetime)
    except (CroniterError, ValueError, OverflowError):
        return None
    return float(found.timestamp()) if isinstance(found, datetime) else None


def local_time(at: float, zone: ZoneInfo) -> str:
    """``Mon 2026-03-30 09:00 CEST``: a time as people in ``zone`` read it."""
    return datetime.fromtimestamp(at, zone).strftime("%a %Y-%m-%d %H:%M %Z")


def _ahead(amount: str, unit: str, now: float, text: str, zone: ZoneInfo) -> float:
    count = 1.0 if amount in ("a", "an", "one") else float(amount)
    seconds = count * _UNITS[unit]
    if seconds < 1:
        raise Refused(f"{text!r} is now, not later: give a time at least a second ahead.")
    if seconds > MAX_AHEAD_S:
        raise Refused(f"{text!r} is more than a year ahead; a prompt runs within a year.")
    return now + seconds


def _iso(text: str, now: float, zone: ZoneInfo) -> float:
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise Refused(f"cannot read when={text!r}. {accepted_forms(zone)}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=zone)
    try:
        at = parsed.timestamp()
    except (OverflowError, OSError, ValueError):
        raise Refused(f"cannot read when={text!r}. {accepted_forms(zone)}") from None
    if at <= now:
        ago = _duration(now - at)
        raise Refused(
            f"{text!r} is in the past ({ago} ago; now it is {local_time(now, zone)}). "
            "Give a time ahead."
        )
    if at - now > MAX_AHEAD_S:
        raise Refused(f"{text!r} is more than a year ahead; a prompt runs within a year.")
    return at


def _cron(expression: str, now: float, zone: ZoneInfo, min_interval_s: float) -> Timing:
    if not croniter.is_valid(expression):
        raise Refused(f"{expression!r} is not a valid cron expression. {accepted_forms(zone)}")
    times: list[float] = []
    at: float | None = now
    while at is not None and len(times) < GAPS_CHECKED:
        at = next_run(expression, zone, at)
        if at is not None:
            times.append(at)
    if not times:
        raise Refused(
            f"the cron expression {expression!r} never fires (no such date, such as 30 February). "
            f"{accepted_forms(zone)}"
        )
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    if gaps and min(gaps) < min_interval_s:
        raise Refused(
            f"{expression!r} runs more often than the limit of once every "
            f"{_duration(min_interval_s)}; choose a sparser expression."
        )
    return Timing(times[0], expression)


def _duration(seconds: float) -> str:
    delta = timedelta(seconds=round(seconds))
    if delta.days >= 2:
        return f"{delta.days} days"
    hours, rest = divmod(int(delta.total_seconds()), 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    return f"{secs} s"
