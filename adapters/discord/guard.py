"""Gateway events discord.py cannot read are skipped, not fatal.

discord.py reads each dispatch with ``ConnectionState.parsers[event](data)`` inside its
websocket receive loop; an exception there ends the connection, and with it the session (the
client identifies anew, and what was sent meanwhile is never delivered). :func:`guard_parsers`
wraps every parser once, right after the client's state exists: an event that fails to parse
is logged in one line — its name, the kind of error and where discord.py raised it, never the
payload or the error's text, which can quote the payload — counted, and skipped.

The wrapper also tells ``on_ready_event`` when a new session begins (READY), before that
event is read: whatever the gateway sends after it belongs to the new session.

A frame that does not decode at all — not UTF-8 once inflated, not JSON, JSON that is not an
object (``[]``), nesting deeper than the JSON reader goes — fails before any parser, in the
websocket's ``received_message``: :func:`guard_frames` wraps that method on each websocket the
client opens (discord.py hands every new one to ``ConnectionState._update_references``), so
such a frame is logged (its kind of error only), counted as ``frame`` and skipped, and the
connection is kept. A broken compression stream still ends the connection: nothing after it
could be read.
"""

from __future__ import annotations

import logging
import traceback
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

Parser = Callable[[Any], None]
_GUARDED = "_threadline_guarded"
FRAME = "frame"
"""How a frame that does not decode is counted among the skipped events."""
UNREADABLE = (ValueError, TypeError, AttributeError, KeyError, RecursionError)
"""What reading a frame that does not decode raises (``UnicodeDecodeError`` and
``JSONDecodeError`` are value errors); discord.py's own signals (reconnect, closed) and
socket errors are none of these."""


def guard_frames(state: Any, skipped: Counter[str]) -> None:
    """Each websocket discord.py opens for ``state`` (a ``ConnectionState``) skips frames that do
    not decode."""
    update = state._update_references
    if getattr(update, _GUARDED, False):
        return

    def update_and_guard(ws: Any) -> None:
        update(ws)
        receive = ws.received_message
        if not getattr(receive, _GUARDED, False):
            ws.received_message = _frames_guarded(receive, skipped)

    setattr(update_and_guard, _GUARDED, True)
    state._update_references = update_and_guard


def _frames_guarded(
    receive: Callable[[Any], Awaitable[None]], skipped: Counter[str]
) -> Callable[[Any], Awaitable[None]]:
    async def receive_or_skip(msg: Any, /) -> None:
        try:
            await receive(msg)
        except UNREADABLE as exc:
            skipped[FRAME] += 1
            log.warning("skipped a frame from Discord that could not be read: %s", describe(exc))

    setattr(receive_or_skip, _GUARDED, True)
    return receive_or_skip


def guard_parsers(
    parsers: dict[str, Parser], skipped: Counter[str], on_ready_event: Callable[[], None]
) -> None:
    """Wrap each entry of ``parsers`` in place (the dict discord.py's websocket reads)."""
    for event, parse in list(parsers.items()):
        if not getattr(parse, _GUARDED, False):
            parsers[event] = _guarded(
                event, parse, skipped, on_ready_event if event == "READY" else None
            )


def _guarded(
    event: str, parse: Parser, skipped: Counter[str], before: Callable[[], None] | None
) -> Parser:
    def parse_or_skip(data: Any) -> None:
        if before is not None:
            before()
        try:
            parse(data)
        except Exception as exc:
            skipped[event] += 1
            log.warning(
                "skipped a %s event from Discord that could not be read: %s", event, describe(exc)
            )

    setattr(parse_or_skip, _GUARDED, True)
    return parse_or_skip


def describe(exc: BaseException) -> str:
    """The error's kind and where it was raised; a missing field is named (a field name comes
    from the code, not from the payload)."""
    kind = type(exc).__name__
    key = exc.args[0] if isinstance(exc, KeyError) and exc.args else None
    if isinstance(key, str) and key.isidentifier() and len(key) <= 40:
        kind = f"{kind} {key!r} (a missing field)"
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return kind
    last = frames[-1]
    return f"{kind} in {Path(last.filename).name}:{last.lineno} ({last.name})"
