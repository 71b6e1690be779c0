"""The note of a thread's earlier messages: most recent kept within the character bound."""

from __future__ import annotations

from bot.conversation import Earlier
from bot.history import HEAD, MAX_MESSAGE_CHARS, earlier_note


def test_the_most_recent_messages_fit_and_the_rest_are_counted() -> None:
    history = [Earlier("Ada", f"message {n} " + "x" * 80) for n in range(10)]
    note = earlier_note(history, len(HEAD) + 3 * 110)
    assert note is not None
    lines = note.splitlines()
    assert lines[:2] == [HEAD, "(7 older messages left out)"]
    assert [line.split()[2] for line in lines[2:]] == ["7", "8", "9"]


def test_nothing_to_say_and_a_long_message_cut() -> None:
    assert earlier_note([], 8000) is None
    assert earlier_note([Earlier("Ada", "   ")], 8000) is None
    note = earlier_note([Earlier("Ada", "y" * 5000)], 8000)
    assert (
        note is not None
        and note.endswith("…")
        and len(note.splitlines()[1]) == len("[Ada]: ") + MAX_MESSAGE_CHARS
    )
