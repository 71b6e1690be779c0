"""The card of a sign-in a run waits for, where the surface cannot show its person a private
note: it names the person and the server and holds **no link** (the link signs in whoever opens
it, as that person); its "Sign in…" shows the link to the person alone, in the click's private
note (:mod:`bot.mcp.sign_in_links`). Once the wait ends, the card says how and loses its
button."""

from __future__ import annotations

from bot.api.actions import SignIn, encode
from bot.api.surface import Button
from bot.engine.events import SignInEnded, SignInNeeded

SIGN_IN = "Sign in…"


def note_text(event: SignInNeeded) -> str:
    """The private note that holds the link (a surface that shows one person a note)."""
    return (
        f"{event.person_name}, {event.server} needs you to sign in before this run can go on:"
        f" [sign in to {event.server}]({event.link}) (this link is for you alone; the run"
        " waits, and goes on once you are signed in)"
    )


def card_text(event: SignInNeeded) -> str:
    return (
        f"{event.person_name}, {event.server} needs you to sign in before this run can go on."
        f" Press {SIGN_IN} for your link (only you can open it; the run waits and goes on once"
        " you are signed in)."
    )


def card_buttons(event: SignInNeeded) -> tuple[Button, ...]:
    return (Button(encode(SignIn(event.wait_id)), SIGN_IN, "primary"),)


def unkept_text(event: SignInNeeded) -> str:
    """Where the link can neither be told privately nor kept for a click (no store): it is not
    shown at all, and the call ends when its wait does."""
    return (
        f"{event.person_name}, {event.server} needs you to sign in, but this bot cannot show you"
        " the link privately here (it keeps no store for it), so it is not shown: the call ends"
        " without it."
    )


def ended_text(event: SignInEnded) -> str:
    if event.signed_in:
        return f"{event.person_name} signed in to {event.server}."
    return (
        f"{event.person_name}'s sign-in to {event.server} ended without signing in (the wait"
        " is over, and its link no longer works)."
    )
