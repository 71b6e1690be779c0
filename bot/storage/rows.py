"""Rows as both stores write and read them: the session row, ids with their letter (``s12``,
``m3``) and the values in table order."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError

from bot.api.inbound import Attachment, ThreadKey
from bot.errors import StoreError
from bot.llm.messages import Message, Usage, UserMessage, load_message
from bot.memory.model import Memory
from bot.policy import keys
from bot.scheduler.schedules import Schedule
from bot.sessions.model import AnswerRef, LiveMessage, PanelRef, RunState, Session, Todo

_FILES = TypeAdapter(tuple[Attachment, ...])


def dump_files(files: Sequence[Attachment]) -> str | None:
    """An arrival's files as its ``files`` column holds them (None: no files)."""
    return _FILES.dump_json(tuple(files)).decode() if files else None


def load_files(text: str | None) -> tuple[Attachment, ...]:
    """The files of an arrival's ``files`` column; none when it is empty or unreadable."""
    if not text:
        return ()
    try:
        return _FILES.validate_json(text)
    except ValidationError:
        return ()


def number(prefixed: str, letter: str) -> int | None:
    """``s12`` → 12 (for ``letter`` ``s``); None for anything else."""
    digits = prefixed[1:] if prefixed[:1] == letter else ""
    return int(digits) if digits.isdigit() and len(digits) < 19 else None


def keys_within(rule: str) -> tuple[str, str]:
    """For a store's search of the keys ``rule`` covers (a key or its first parts, compared
    whole, as in :mod:`bot.policy.keys`): the key it names, and the text every key under it
    begins with. ``slack:T1:C1`` → ``slack:T1:C1`` and ``slack:T1:C1:``, which
    ``slack:T1:C10:…`` does not begin with. A rule with no parts (``""``) → ``""`` and ``""``:
    every key begins with ``""``."""
    named = ":".join(keys.parts(rule))
    return named, keys.as_prefix(rule) if named else ""


def schedule(row: Any) -> Schedule:
    return Schedule(f"s{row[0]}", *row[1:])


def memory(row: Any) -> Memory:
    return Memory(f"m{row[0]}", *row[1:])


SESSION_COLUMNS = (
    "todos, usage, cost_usd, state, panel, created_at, updated_at, inbox, day, day_tokens,"
    " day_cost_usd, stop_buttons, toolkits"
)
"""The session row's columns after ``key``, in the order both stores read and write them."""
_TODOS: TypeAdapter[tuple[Todo, ...]] = TypeAdapter(tuple[Todo, ...])
_INBOX: TypeAdapter[list[UserMessage]] = TypeAdapter(list[UserMessage])
_TOOLKITS: TypeAdapter[dict[str, dict[str, Any]]] = TypeAdapter(dict[str, dict[str, Any]])
THREAD = "@thread"
"""The entry of the ``toolkits`` column that holds the thread's own settings (its model, its
quiet flag) and the messages of its last answer; no toolkit can be named so. Kept there so
that these need no column of their own."""


def _toolkits_column(session: Session) -> str:
    kept: dict[str, dict[str, Any]] = dict(session.toolkits)
    own: dict[str, Any] = {}
    if session.model is not None:
        own["model"] = session.model
    if session.quiet:
        own["quiet"] = True
    if session.answer is not None:
        own["answer"] = {"to": session.answer.to, "ids": list(session.answer.message_ids)}
    if own:
        kept[THREAD] = own
    return _TOOLKITS.dump_json(kept).decode()


def _thread_own(toolkits: dict[str, dict[str, Any]]) -> tuple[str | None, bool, AnswerRef | None]:
    """The thread's own model, quiet flag and last answer, taken out of the toolkits' states."""
    own = toolkits.pop(THREAD, {})
    model = own.get("model")
    answer = own.get("answer")
    ref = None
    if isinstance(answer, dict) and isinstance(answer.get("to"), str):
        ids = answer.get("ids")
        ref = AnswerRef(answer["to"], tuple(str(i) for i in ids) if isinstance(ids, list) else ())
    return (model if isinstance(model, str) and model else None), own.get("quiet") is True, ref


def _live_column(live: Sequence[LiveMessage]) -> str:
    """The ``stop_buttons`` column: the run's live messages as JSON objects."""
    return json.dumps([{"id": m.message_id, "text": m.text, "stream": m.stream} for m in live])


def _live_messages(raw: str) -> list[LiveMessage]:
    """The column read back; a bare id is a record from before the text was kept."""
    return [
        LiveMessage(str(m), None)
        if not isinstance(m, dict)
        else LiveMessage(str(m["id"]), m.get("text"), bool(m.get("stream")))
        for m in json.loads(raw)
    ]


def session_row(session: Session) -> tuple[Any, ...]:
    """``key`` and the :data:`SESSION_COLUMNS` of ``session``, as stored."""
    panel = session.panel
    shown = (
        json.dumps(
            {
                "message_id": panel.message_id,
                "content_hash": panel.content_hash,
                "pinned": panel.pinned,
            }
        )
        if panel is not None
        else None
    )
    return (
        session.key,
        _TODOS.dump_json(session.todos).decode(),
        session.usage.model_dump_json(),
        session.cost_usd,
        session.state.value,
        shown,
        session.created_at,
        session.updated_at,
        _INBOX.dump_json(session.inbox).decode(),
        session.day,
        session.day_tokens,
        session.day_cost_usd,
        _live_column(session.live_messages),
        _toolkits_column(session),
    )


def arrived(session: Session, messages: Sequence[Message] = ()) -> list[str]:
    """Event ids of the messages the session holds once ``messages`` are written (their
    arrivals are done)."""
    return [
        m.event_id for m in (*messages, *session.inbox) if isinstance(m, UserMessage) and m.event_id
    ]


TITLE_CHARS = 80
"""The most characters of a person's first words kept as a thread's title for them."""


def title_of(text: str, limit: int = TITLE_CHARS) -> str:
    """``text`` on one line with its spaces folded, cut at a word to ``limit`` characters
    (an ellipsis says it was cut)."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    word = cut.rsplit(" ", 1)[0] if " " in cut[limit // 2 :] else cut
    return word.rstrip(" ,;:.") + "…"


def spoken(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """Who speaks in ``messages`` (people's messages with an author id), once each, with the
    title of their first message among them: ``(author id, title)``."""
    found: dict[str, str] = {}
    for m in messages:
        if isinstance(m, UserMessage) and m.author_id and m.author_id not in found:
            found[m.author_id] = title_of(m.text)
    return list(found.items())


def session_of(key: ThreadKey, row: Any, bodies: Sequence[str]) -> Session:
    """The session stored as ``row`` (its :data:`SESSION_COLUMNS`) with the transcript ``bodies``."""
    try:
        toolkits = _TOOLKITS.validate_json(row[12])
        model, quiet, answer = _thread_own(toolkits)
        return Session(
            key=key,
            messages=[load_message(body) for body in bodies],
            todos=_TODOS.validate_json(row[0]),
            usage=Usage.model_validate_json(row[1]),
            cost_usd=float(row[2]),
            state=RunState(row[3]),
            panel=PanelRef(**json.loads(row[4])) if row[4] else None,
            created_at=float(row[5]),
            updated_at=float(row[6]),
            inbox=_INBOX.validate_json(row[7]),
            day=row[8],
            day_tokens=int(row[9]),
            day_cost_usd=float(row[10]),
            live_messages=_live_messages(row[11]),
            toolkits=toolkits,
            model=model,
            quiet=quiet,
            answer=answer,
        )
    except (ValidationError, ValueError, TypeError) as exc:
        raise StoreError(f"the stored session {key} is unreadable: {exc}") from exc
