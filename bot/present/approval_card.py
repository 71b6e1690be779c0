"""The approval card: the exact tool call in full, who may decide, then who decided and when.

Nothing that would run is hidden: the arguments are shown completely (up to the tool's own
argument limit, which the engine enforces before a card exists). Arguments too long for one
message come first, in as many messages as they need (code blocks never broken), and the card
proper — the status line and the buttons — is the last message, the one edited when someone
decides. Invisible and bidirectional control characters are shown escaped (``\\u202e``), so what
the card shows is what runs.
"""

from __future__ import annotations

import json
import logging
import unicodedata
from datetime import UTC, datetime

from bot.api.actions import Decide, encode
from bot.api.surface import Button, Style, Surface
from bot.approvals.models import ApprovalRequest, ApprovalStatus, Choice
from bot.engine.events import CallAllowed, ToolFinished
from bot.errors import SurfaceError, SurfaceRateLimited
from bot.infra.clock import Clock
from bot.present.split import split_message

log = logging.getLogger(__name__)
POST_ATTEMPTS = 5
FOLD_LINES = 12
"""Arguments longer than this (in lines, as shown) of a call run by a rule go below a one-line
head, in messages of their own, rather than fill the reply."""
_SHOWN_AS_IS = frozenset("\n\t")
_INVISIBLE = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})


def _button(
    choice: Choice, request: ApprovalRequest, label: str, style: Style = "default"
) -> Button:
    return Button(encode(Decide(choice, request.id)), label, style)


def buttons(request: ApprovalRequest) -> tuple[Button, ...]:
    if not request.pending:
        return ()
    shown = [
        _button(Choice.APPROVE, request, "Approve", "primary"),
        _button(Choice.DENY, request, "Deny", "danger"),
    ]
    if request.offer_always:
        shown.append(_button(Choice.EXACT, request, EXACT_LABEL))
        shown.append(_button(Choice.ALWAYS, request, _always_label(request)))
    return tuple(shown)


EXACT_LABEL = "Always allow this exact call"


def _always_label(request: ApprovalRequest) -> str:
    who = request.requester_name
    if request.allow_subject:  # a rule for one origin: "Always allow https://x.org for Ann here"
        return f"Always allow {_cut(request.allow_subject, 34)} for {_cut(who, 20)} here"
    return f"Always allow for {_cut(who, 40)} here"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _rules_line(request: ApprovalRequest) -> str:
    """What each "Always allow" button would let run from now on, in full."""
    tool, who = f"`{request.tool}`", request.requester_name
    if request.allow_subject:
        wide = f"{tool} calls to {request.allow_subject} (that scheme, host and port)"
    else:
        wide = f"every {tool} call"
    return (
        f"“{EXACT_LABEL}”: {tool} with exactly these arguments; “{_always_label(request)}”: "
        f"{wide}; for {who} in this channel. Either way each such call is shown in full "
        "before it runs."
    )


def visible(text: str) -> str:
    """``text`` with every invisible or direction-changing character written as ``\\uXXXX``."""
    return "".join(
        ch
        if ch in _SHOWN_AS_IS or unicodedata.category(ch) not in _INVISIBLE
        else f"\\u{ord(ch):04x}"
        for ch in text
    )


def arguments_text(raw: str) -> str:
    """The call's arguments as people read them: indented JSON, every character visible."""
    try:
        text = json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except ValueError:
        text = raw
    return visible(text).replace("```", "`\u200b``")


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _head(request: ApprovalRequest) -> str:
    return {
        ApprovalStatus.PENDING: f"🔐 **Approval needed** to run `{request.tool}`",
        ApprovalStatus.APPROVED: f"✅ **Approved** by {request.decided_by_name}: `{request.tool}`",
        ApprovalStatus.DENIED: f"❌ **Denied** by {request.decided_by_name}: `{request.tool}`",
        ApprovalStatus.EXPIRED: f"⌛ **Expired**: nobody decided on `{request.tool}` in time",
    }[request.status]


def _footer(request: ApprovalRequest, note: str | None) -> str:
    if request.pending:
        line = (
            f"Asked by {request.requester_name}. Who can decide: {request.approvers.describe()}. "
            f"{_escalation(request)}Expires at {_when(request.expires_at)}."
        )
        if request.offer_always:
            line = f"{line}\n{_rules_line(request)}"
    elif request.status is ApprovalStatus.EXPIRED:
        at = request.decided_at if request.decided_at is not None else request.expires_at
        line = f"Asked by {request.requester_name}; expired at {_when(at)}. Nothing was run."
    else:
        at = request.decided_at if request.decided_at is not None else request.created_at
        line = f"Asked by {request.requester_name}; decided at {_when(at)}."
    return f"{line}\n{note}" if note else line


def _escalation(request: ApprovalRequest) -> str:
    at = request.escalates_at
    if at is None:
        return ""
    return f"From {_when(at)}, {request.approvers.describe_escalation()} can decide too. "


def card_parts(request: ApprovalRequest, max_chars: int, note: str | None = None) -> list[str]:
    """The card as messages of at most ``max_chars`` (before rendering): the whole call, then
    the status; the last message is the one with the buttons."""
    call = f"```json\n{arguments_text(request.arguments)}\n```"
    head, footer = _head(request), _footer(request, note)
    warning = f"\n⚠️ {visible(request.caution)}" if request.caution else ""
    whole = f"{head}{warning}\n{call}\n{footer}"
    if len(whole) <= max_chars:
        return [whole]
    budget = max(200, max_chars - 80)
    parts = split_message(call, budget)
    total = len(parts)
    shown = [
        f"`{request.tool}`, the call in full ({i} of {total}):\n{p}" for i, p in enumerate(parts, 1)
    ]
    return [*shown, f"{head} (the call is shown in full above){warning}\n{footer}"]


def allowed_parts(event: CallAllowed, max_chars: int) -> list[str]:
    """What the thread shows of a call a rule lets run without a card, before it runs: the
    tool, why it runs, and its arguments in full; long arguments are folded below a one-line
    head, in as many messages as they need (never cut)."""
    shown = arguments_text(event.arguments)
    call = f"```json\n{shown}\n```"
    head = f"▸ `{event.name}` runs without asking, {visible(event.allowed_by)}"
    whole = f"{head}. Its arguments:\n{call}"
    lines = shown.count("\n") + 1
    if lines <= FOLD_LINES and len(whole) <= max_chars:
        return [whole]
    parts = split_message(call, max(200, max_chars - 80))
    total = len(parts)
    return [
        f"{head}. Its arguments ({lines} lines, {len(shown):,} characters) follow in full.",
        *(f"`{event.name}`, its arguments ({i} of {total}):\n{p}" for i, p in enumerate(parts, 1)),
    ]


async def post_allowed(surface: Surface, clock: Clock, event: CallAllowed) -> None:
    """Show a call a rule lets run (see :func:`allowed_parts`); a rate limit is waited out."""
    for part in allowed_parts(event, _room(surface)):
        await _posted(surface, clock, surface.render(part), ())


def card_text(request: ApprovalRequest, note: str | None = None) -> str:
    """The whole card in one text (what a platform without a length limit shows)."""
    return card_parts(request, 1 << 30, note)[0]


async def post_card(surface: Surface, clock: Clock, request: ApprovalRequest) -> str:
    """Post the card (in several messages when the call is long); returns the id of the one
    with the buttons. A rate limit is waited out: cards are never dropped."""
    parts = card_parts(request, _room(surface))
    message_id = ""
    for i, part in enumerate(parts, 1):
        shown = buttons(request) if i == len(parts) else ()
        message_id = await _posted(surface, clock, surface.render(part), shown)
    return message_id


async def _posted(surface: Surface, clock: Clock, text: str, shown: tuple[Button, ...]) -> str:
    for attempt in range(1, POST_ATTEMPTS + 1):
        try:
            return await surface.post(text, shown)
        except SurfaceRateLimited as exc:
            if attempt == POST_ATTEMPTS:
                raise
            await clock.sleep(exc.retry_after)
    raise AssertionError("unreachable")


async def update_card(
    surface: Surface, clock: Clock, request: ApprovalRequest, note: str | None = None
) -> None:
    """Show the decision on the card (its last message) and remove its buttons; best effort
    after a few tries. ``note`` adds a line (what became of an approved call)."""
    if request.card_id is None:
        return
    text = card_parts(request, _room(surface), note)[-1]
    for attempt in range(1, POST_ATTEMPTS + 1):
        try:
            await surface.edit(request.card_id, surface.render(text), buttons(request), final=True)
            return
        except SurfaceRateLimited as exc:
            await clock.sleep(exc.retry_after)
        except SurfaceError:
            log.warning(
                "could not update approval card %s (try %d)",
                request.card_id,
                attempt,
                exc_info=True,
            )
            return


def ran_note(done: ToolFinished) -> str:
    """What an approved call did, for its card: the outcome and its first lines of output."""
    mark = "✗ Failed" if done.is_error else "▶ Ran"
    note = f"{mark}: {done.summary}" if done.summary else mark
    return _with_preview(note, done)


def ran_line(done: ToolFinished) -> str:
    """What a call that had no card did, for the reply: one line (the tool and its outcome) and
    its first lines of output."""
    line = f"▸ `{done.name}`" + (f" · {visible(done.summary)}" if done.summary else "")
    return line if _said(done.summary, done.preview) else _with_preview(line, done)


def _said(summary: str, preview: str) -> bool:
    """The summary already is the whole preview (a one-line output)."""
    one = preview.strip()
    return "\n" not in one and (
        summary == one or (summary.endswith("…") and one.startswith(summary[:-1]))
    )


def _with_preview(head: str, done: ToolFinished) -> str:
    shown = visible(done.preview).replace("```", "`\u200b``")
    return f"{head}\n```\n{shown}\n```" if shown.strip() else head


def _room(surface: Surface) -> int:
    """Characters of Markdown one message may hold, with room for what rendering adds."""
    return max(400, surface.limits.max_chars - surface.limits.max_chars // 10)
