"""A toolkit's state in one thread: a small JSON object kept in the session
(``Session.toolkits[<toolkit name>]``) and saved with it.

A tool of the toolkit reads and changes it through its :class:`~bot.tools.base.ToolContext`
(``state(ctx.session, name)``, ``set_state(...)``); the change is saved in the same write as
the call's result, and the next model call of the thread is offered the tools (and parameter
values) that follow from it. Calls run one after another, so each sees the previous one's
change. Outside a run (a slash command) the change is saved with ``save_state``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from bot.sessions.model import Session

MAX_STATE_CHARS = 100_000
"""How large one toolkit's state in one thread may grow, as JSON."""

EMPTY: Mapping[str, Any] = {}


def state(session: Session | None, toolkit: str) -> Mapping[str, Any]:
    """The toolkit's state in the session's thread (empty when it has none or there is no
    session)."""
    if session is None:
        return EMPTY
    return session.toolkits.get(toolkit, EMPTY)


def set_state(session: Session, toolkit: str, value: Mapping[str, Any]) -> None:
    """Replace the toolkit's state in the session (saved with the session's next write).

    Raises ValueError when ``value`` is not JSON or larger than :data:`MAX_STATE_CHARS`.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the state of {toolkit} must be JSON: {exc}") from None
    if len(text) > MAX_STATE_CHARS:
        raise ValueError(
            f"the state of {toolkit} would be {len(text):,} characters (at most {MAX_STATE_CHARS:,})"
        )
    if value:
        session.toolkits[toolkit] = json.loads(text)
    else:
        session.toolkits.pop(toolkit, None)
