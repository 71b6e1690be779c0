"""The fenced writes (a transcript appended, a state saved, under the thread's lease) as one
statement over arrays each (see :class:`~bot.storage.postgres.batch.AsOne`).

The session rows are upserted from ``unnest``, the arrivals they now hold deleted, the new
messages inserted, and the main query holds every call's lease (:data:`_HOLD`, in the order of
the keys), so one lost lease fails the whole statement, which is then sent again call by call.
Two calls for one thread in a batch (a steered message saved while the run appends) go in
rounds, each thread's calls in their order.
"""

from __future__ import annotations

from typing import Any

from bot.storage import rows as stored
from bot.storage.postgres.batch import AsOne, by_column

_TYPES = (
    "text",
    "text",
    "text",
    "float8",
    "text",
    "text",
    "float8",
    "float8",
    "text",
    "text",
    "int8",
    "float8",
    "text",
    "text",
)
"""The types of ``key`` and the :data:`~bot.storage.rows.SESSION_COLUMNS`, in order."""
_COLUMNS = ["key", *(c.strip() for c in stored.SESSION_COLUMNS.split(","))]
_SET = ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS if c not in ("key", "created_at"))
_ROWS = (
    "WITH i AS (SELECT * FROM unnest("
    + ", ".join(f"${n}::{t}[]" for n, t in enumerate(_TYPES, 1))
    + ", $15::text[], $16::int8[]) AS i ("
    + ", ".join(_COLUMNS)
    + ", owner, token)),"
    " arrived AS (DELETE FROM arrivals WHERE event_id = ANY($17::text[])),"
    f" saved AS (INSERT INTO sessions ({', '.join(_COLUMNS)}) SELECT {', '.join(_COLUMNS)} FROM i"
    f" ON CONFLICT (key) DO UPDATE SET {_SET})"
)
_HOLD = (
    ", held AS (SELECT l.key FROM leases l JOIN i ON l.key = i.key AND l.owner = i.owner"
    " AND l.token = i.token WHERE l.key = ANY($1::text[]) ORDER BY l.key FOR SHARE OF l)"
    " SELECT CASE WHEN (SELECT count(*) FROM held) < (SELECT count(*) FROM i)"
    " THEN threadline_hold_lease('', '', 0) END"
)
"""Every call's lease, held (``FOR SHARE``, in the order of the keys); when one is no longer
its writer's, the statement fails (the hold of a lease that cannot exist raises TL001) and the
batch goes call by call."""
UPSERTS = _ROWS + _HOLD
APPENDS = (
    _ROWS + ", added AS (INSERT INTO messages (key, seq, body)"
    " SELECT * FROM unnest($18::text[], $19::int4[], $20::text[])),"
    " spoke AS (INSERT INTO thread_people (person, key, title, last_at)"
    " SELECT s.person, s.key, s.title, i.updated_at"
    " FROM unnest($21::text[], $22::text[], $23::text[]) AS s (person, key, title)"
    " JOIN i ON i.key = s.key"
    " ON CONFLICT (person, key) DO UPDATE SET last_at = excluded.last_at)" + _HOLD
)


def _columns(calls: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """``$1`` to ``$17``: each session column of the calls as an array, their owners, tokens and
    the event ids of the arrivals they now hold (each call: :func:`session_values`, then its
    own arguments, ending in owner and token)."""
    columns = by_column([c[:14] for c in calls])
    arrived = [event_id for c in calls for event_id in c[14]]
    return (*columns, [c[-2] for c in calls], [c[-1] for c in calls], arrived)


def _appends(calls: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """:func:`_columns`, then the new messages of every call: keys, numbers and bodies; then
    the people speaking in them: who, in which thread, their title there (each call's
    arguments end in its people as ``(person, title)`` pairs before owner and token)."""
    keys: list[str] = []
    numbers: list[int] = []
    bodies: list[str] = []
    people: tuple[list[str], list[str], list[str]] = ([], [], [])
    for c in calls:
        key, first, new = c[0], c[15], c[16]
        keys.extend([key] * len(new))
        numbers.extend(range(first, first + len(new)))
        bodies.extend(new)
        for person, title in c[17]:
            people[0].append(person)
            people[1].append(key)
            people[2].append(title)
    return (*_columns(calls), keys, numbers, bodies, *people)


SAVES = AsOne(UPSERTS, _columns)
APPENDED = AsOne(APPENDS, _appends)
