"""Plain words for the thread when a run cannot go on, or must wait."""

from __future__ import annotations

import math
from datetime import datetime
from zoneinfo import ZoneInfo

from bot.errors import (
    ContextOverflow,
    FallbacksFailed,
    ModelError,
    ModelRateLimited,
    ModelRejected,
    ModelServerError,
    ModelSilent,
    ModelStreamBroken,
    ModelUnavailable,
)


def failure_text(exc: ModelError, *, partial: bool) -> str:
    match exc:
        case FallbacksFailed(failures=failures):
            said = "; ".join(f"{name} ({why})" for name, why in failures)
            text = f"No model could answer: {said}. Please try again in a moment."
        case ModelUnavailable():
            text = "I couldn't reach the model server. Please try again in a moment; if it keeps happening, an operator can run `threadline doctor`."
        case ModelRateLimited(retry_after=float() as wait):
            text = f"The model server is rate-limiting requests and asked to wait {duration(wait)}. Please try again then."
        case ModelRateLimited():
            text = "The model is rate-limiting requests right now. Please try again in a minute."
        case ModelServerError():
            text = "The model server kept failing (it answered with a server error). Please try again shortly."
        case ContextOverflow():
            text = "This thread has grown longer than the model can read at once. Start a new thread to continue."
        case ModelSilent():
            text = str(exc)
        case ModelStreamBroken():
            text = _stream_text(exc, partial=partial)
        case ModelRejected():
            text = f"The model server refused the request: {exc}"
        case _:
            text = f"The model failed: {exc}"
    if partial:
        text += " The reply above is incomplete."
    return text


def _stream_text(exc: ModelStreamBroken, *, partial: bool) -> str:
    """A stream that broke: cut off, or what was wrong with it (not valid, empty)."""
    if exc.what == "cut_off":
        return "The model's answer was cut off."
    text = f"{str(exc)[:1].upper()}{str(exc)[1:]}."
    if not partial:
        text += " Please try again; if it keeps happening, an operator can run `threadline doctor`."
    return text


def waiting_text(seconds: float, now: float, zone: str) -> str:
    """The model server asked to wait ``seconds`` before the call is tried again."""
    at = datetime.fromtimestamp(now + seconds, ZoneInfo(zone))
    return f"The model server asked to wait {duration(seconds)}; retrying at {at:%H:%M:%S %Z}."


def duration(seconds: float) -> str:
    """``120 s``, ``45 min``, ``3 h``: whole units, rounded up."""
    if seconds < 300:
        return f"{math.ceil(seconds)} s"
    if seconds <= 3 * 3600:
        return f"{math.ceil(seconds / 60)} min"
    return f"{math.ceil(seconds / 3600)} h"
