"""Approvals a running call waits for inline (a sub-agent's tool), as the thread's session
records them: written before their card shows and removed once the decision is in, so that
whatever cuts the wait off — a restart, a Stop, a reset — closes them: the request expires, its
card says why and loses its buttons, and the call never runs. Nothing of them looks like a
paused run, so a restart never posts their card again."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from bot.api.surface import Surface
from bot.approvals.models import ApprovalRequest, ApprovalStatus
from bot.present.approval_card import update_card
from bot.sessions.model import Session
from bot.tools.state import set_state, state

if TYPE_CHECKING:  # decisions reads the record too
    from bot.approvals.decisions import Decisions

log = logging.getLogger(__name__)

RECORD = "inline__approvals"
"""Where the session keeps them (never a toolkit's name: those hold no ``__``)."""
RESTARTED = "The sub-agent asking for this was cut off by a restart, so it was not run."
STOPPED = "The run asking for this was stopped, so it was not run."
RESET = "The thread was reset before anyone decided, so it was not run."


def recorded(session: Session) -> Mapping[str, str]:
    """The approvals waited for inline in the session's thread: approval id → call id."""
    return state(session, RECORD)


def remember(session: Session, request: ApprovalRequest) -> None:
    set_state(session, RECORD, {**recorded(session), request.id: request.call_id})


def forget(session: Session, approval_id: str) -> None:
    set_state(session, RECORD, {k: v for k, v in recorded(session).items() if k != approval_id})


async def close(
    decisions: Decisions,
    session: Session,
    surface: Surface | None,
    note: str,
    *,
    only: str | None = None,
) -> int:
    """Close the session's inline approvals (only ``only``, when given) and save the session;
    returns how many were recorded. A pending request expires with ``note`` on its card; one
    approved that never ran says ``note`` on its card (the call waiting for it is gone)."""
    found = [a for a in recorded(session) if only is None or a == only]
    for approval_id in found:
        request = await decisions.store.get_approval(approval_id)
        if request is None:
            continue
        if request.pending and await decisions.expire(request, surface, note):
            log.info("inline approval %s in %s closed: %s", approval_id, session.key, note)
            continue
        latest = await decisions.store.get_approval(approval_id) or request
        if latest.status is ApprovalStatus.APPROVED and surface is not None:
            await update_card(surface, decisions.holds.clock, latest, note)
    if found:
        for approval_id in found:
            forget(session, approval_id)
        session.updated_at = decisions.holds.clock.now()
        await decisions.holds.sessions.save_state(session)
    return len(found)
