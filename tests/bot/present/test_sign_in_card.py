"""How the presenter shows a sign-in link: to its person alone, as a private note where the
surface has them (Slack's ephemeral messages); where it has none, or the note is refused
(Slack's ``chat.postEphemeral`` failing), as a card in the thread without the link, whose
"Sign in…" the core answers privately; the card says how the wait ended, without its button."""

from __future__ import annotations

import pytest

from bot.api.actions import SignIn, encode
from bot.engine.events import EngineEvent, Finished, SignInEnded, SignInNeeded
from bot.infra.clock import ManualClock
from bot.llm.messages import Usage
from bot.present.budget import BudgetRegistry
from bot.present.presenter import Presenter
from bot.sessions.model import PanelRef
from tests.fakes.surface import RecordingSurface, drive

LINK = "https://auth.example/authorize?state=s3cret&client_id=c"
WAIT_ID = "a" * 64
NEEDED = SignInNeeded("docs", "slack:U1", "Alice", LINK, "call-1", WAIT_ID)


class Noting(RecordingSurface):
    """A surface with private notes (as Slack's), which can be told to refuse them."""

    def __init__(self, clock: ManualClock, *, refuse: bool) -> None:
        super().__init__(clock)
        self.refuse = refuse
        self.notes: list[tuple[str, str]] = []

    async def tell(self, person_id: str, text: str) -> bool:
        if self.refuse:
            return False
        self.notes.append((person_id, text))
        return True


async def play(surface: RecordingSurface, clock: ManualClock, *events: EngineEvent) -> None:
    async def persist(ref: PanelRef | None) -> None:
        return None

    presenter = Presenter(surface, clock, BudgetRegistry(clock), None, persist)
    try:
        for event in events:
            await drive(clock, presenter(event), step=0.1)
    finally:
        await drive(clock, presenter.close(), step=0.1)


def posted(surface: RecordingSurface) -> str:
    return "\n".join(c.text or "" for c in surface.calls)


async def test_a_private_note_holds_the_link_and_the_thread_shows_nothing() -> None:
    clock = ManualClock()
    surface = Noting(clock, refuse=False)
    await play(surface, clock, NEEDED, Finished(Usage()))
    [(person, note)] = surface.notes
    assert person == "slack:U1" and f"]({LINK})" in note and "for you alone" in note
    assert LINK not in posted(surface)


@pytest.mark.parametrize("private", [True, False], ids=["note refused", "no notes"])
async def test_without_a_private_note_the_card_holds_no_link(private: bool) -> None:
    clock = ManualClock()
    surface = Noting(clock, refuse=True) if private else RecordingSurface(clock)
    ended = SignInEnded("docs", "Alice", WAIT_ID, signed_in=False)
    await play(surface, clock, NEEDED, ended, Finished(Usage()))
    [card] = [m for m in surface.messages.values() if m.first_buttons]
    assert [(b.label, b.action_id) for b in card.first_buttons] == [
        ("Sign in…", encode(SignIn(WAIT_ID)))
    ]
    first = next(c.text for c in surface.calls if c.op == "post" and c.message_id == card.id)
    assert first == (
        "Alice, docs needs you to sign in before this run can go on. Press Sign in… for your"
        " link (only you can open it; the run waits and goes on once you are signed in)."
    )
    assert card.text.startswith("Alice's sign-in to docs ended without signing in")
    assert not card.buttons, "the ended card loses its button"
    assert LINK not in posted(surface) and "s3cret" not in posted(surface)


async def test_a_link_no_store_keeps_is_not_shown_at_all() -> None:
    clock = ManualClock()
    surface = RecordingSurface(clock)
    unkept = SignInNeeded("docs", "slack:U1", "Alice", LINK, "call-1")
    await play(surface, clock, unkept, Finished(Usage()))
    assert "cannot show you the link privately here" in surface.visible_text()
    assert LINK not in posted(surface)
