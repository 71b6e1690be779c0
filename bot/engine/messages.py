"""Plain words for the thread when a run cannot go on."""

from __future__ import annotations

from bot.errors import (
    ContextOverflow,
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
        case ModelUnavailable():
            text = "I couldn't reach the model server. Please try again in a moment; if it keeps happening, an operator can run `threadline doctor`."
        case ModelRateLimited():
            text = "The model is rate-limiting requests right now. Please try again in a minute."
        case ModelServerError():
            text = "The model server kept failing (it answered with a server error). Please try again shortly."
        case ContextOverflow():
            text = "This thread has grown longer than the model can read at once. Start a new thread to continue."
        case ModelSilent():
            text = str(exc)
        case ModelStreamBroken():
            text = "The model's answer was cut off."
        case ModelRejected():
            text = f"The model server refused the request: {exc}"
        case _:
            text = f"The model failed: {exc}"
    if partial:
        text += " The reply above is incomplete."
    return text
