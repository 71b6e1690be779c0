"""The approval card: the exact tool call, who may decide, and then who decided and when."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from bot.approvals.models import ApprovalRequest, ApprovalStatus, Choice
from bot.clock import Clock
from bot.errors import SurfaceError, SurfaceRateLimited
from bot.present.surface import Button, Surface

log = logging.getLogger(__name__)
POST_ATTEMPTS = 5

MAX_SHOWN_ARGS = 1200


def action_id(choice: Choice, approval_id: str) -> str:
    return f"{choice.value}:{approval_id}"


def parse_action(action: str) -> tuple[Choice, str] | None:
    """``approve:<id>`` → (Choice.APPROVE, id); None for other actions."""
    kind, _, approval_id = action.partition(":")
    try:
        return Choice(kind), approval_id
    except ValueError:
        return None


def buttons(request: ApprovalRequest) -> tuple[Button, ...]:
    if not request.pending:
        return ()
    shown = [
        Button(action_id(Choice.APPROVE, request.id), "Approve", "primary"),
        Button(action_id(Choice.DENY, request.id), "Deny", "danger"),
    ]
    if request.offer_always:
        shown.append(Button(action_id(Choice.ALWAYS, request.id), "Always allow here"))
    return tuple(shown)


def _arguments(raw: str) -> str:
    try:
        text = json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except ValueError:
        text = raw
    text = text.replace("```", "`\u200b``")
    if len(text) > MAX_SHOWN_ARGS:
        cut = len(text) - MAX_SHOWN_ARGS
        text = f"{text[:MAX_SHOWN_ARGS]}\n… ({cut:,} more characters not shown)"
    return text


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")


def card_text(request: ApprovalRequest) -> str:
    head = {
        ApprovalStatus.PENDING: f"🔐 **Approval needed** to run `{request.tool}`",
        ApprovalStatus.APPROVED: f"✅ **Approved** by {request.decided_by_name}: `{request.tool}`",
        ApprovalStatus.DENIED: f"❌ **Denied** by {request.decided_by_name}: `{request.tool}`",
        ApprovalStatus.EXPIRED: f"⌛ **Expired**: nobody decided on `{request.tool}` in time",
    }[request.status]
    lines = [head, f"```json\n{_arguments(request.arguments)}\n```"]
    if request.pending:
        lines.append(
            f"Asked by {request.requester_name}. Who can decide: {request.approvers.describe()}. "
            f"Expires at {_when(request.expires_at)}."
        )
    elif request.decided_at is not None:
        lines.append(f"Asked by {request.requester_name}; decided at {_when(request.decided_at)}.")
    lines.append(f"`sha256:{request.args_hash[:12]}`")
    return "\n".join(lines)


async def post_card(surface: Surface, clock: Clock, request: ApprovalRequest) -> str:
    """Post the card; a rate limit is waited out (cards are never dropped)."""
    for attempt in range(1, POST_ATTEMPTS + 1):
        try:
            return await surface.post(surface.render(card_text(request)), buttons(request))
        except SurfaceRateLimited as exc:
            if attempt == POST_ATTEMPTS:
                raise
            await clock.sleep(exc.retry_after)
    raise AssertionError("unreachable")


async def update_card(surface: Surface, clock: Clock, request: ApprovalRequest) -> None:
    """Show the decision on the card and remove its buttons (best effort after a few tries)."""
    if request.card_id is None:
        return
    for attempt in range(1, POST_ATTEMPTS + 1):
        try:
            await surface.edit(request.card_id, surface.render(card_text(request)), buttons(request))
            return
        except SurfaceRateLimited as exc:
            await clock.sleep(exc.retry_after)
        except SurfaceError:
            log.warning("could not update approval card %s (try %d)", request.card_id, attempt, exc_info=True)
            return
