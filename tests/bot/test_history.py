"""The note of a thread's earlier messages: most recent kept within the character bound, and
whatever a bound left out said where it was, with its true number."""

from __future__ import annotations

from bot.api.inbound import Earlier, Gap
from bot.thread.history import HEAD, MAX_MESSAGE_CHARS, earlier_note


def test_the_character_cut_says_how_many_older_messages_are_not_shown() -> None:
    history = [Earlier("Ada", f"message {n} " + "x" * 80) for n in range(10)]
    note = earlier_note(history, len(HEAD) + 3 * 110)
    assert note is not None
    lines = note.splitlines()
    assert lines[:2] == [HEAD, "(… 7 earlier messages not shown)"]
    assert [line.split()[2] for line in lines[2:]] == ["7", "8", "9"]


def test_the_count_cut_is_said_where_it_was() -> None:
    """The adapter read the root and the most recent messages; 37 between were not read."""
    history = [
        Earlier("Ada", "topic"),
        Gap(37),
        Earlier("Grace", "reply 40"),
        Earlier("Bob", "reply 41"),
    ]
    assert earlier_note(history, 8000) == "\n".join(
        [
            HEAD,
            "[Ada]: topic",
            "(… 37 earlier messages not shown)",
            "[Grace]: reply 40",
            "[Bob]: reply 41",
        ]
    )


def test_both_cuts_add_up_and_an_unknown_count_is_never_made_up() -> None:
    history = [Earlier("Ada", "topic " + "x" * 200), Gap(37), Earlier("Grace", "recent")]
    note = earlier_note(history, len(HEAD) + 40)
    assert note == f"{HEAD}\n(… 38 earlier messages not shown)\n[Grace]: recent"

    unknown = [Gap(None), *(Earlier("Ada", f"m{n} " + "y" * 50) for n in range(3))]
    assert earlier_note(unknown, 8000) == "\n".join(
        [HEAD, "(… earlier messages not shown)", *(f"[Ada]: m{n} " + "y" * 50 for n in range(3))]
    )
    cut = earlier_note(unknown, len(HEAD) + 70)
    assert cut == f"{HEAD}\n(… more than 2 earlier messages not shown)\n[Ada]: m2 " + "y" * 50
    one = earlier_note([Gap(1), Earlier("Ada", "hi")], 8000)
    assert one == f"{HEAD}\n(… 1 earlier message not shown)\n[Ada]: hi"


def test_nothing_to_say_and_a_long_message_cut() -> None:
    assert earlier_note([], 8000) is None
    assert earlier_note([Earlier("Ada", "   ")], 8000) is None
    assert earlier_note([Gap(5)], 8000) is None
    assert earlier_note([Earlier("Ada", "a"), Gap(0), Earlier("Bob", "b")], 8000) == (
        f"{HEAD}\n[Ada]: a\n[Bob]: b"
    )
    note = earlier_note([Earlier("Ada", "y" * 5000)], 8000)
    assert (
        note is not None
        and note.endswith("…")
        and len(note.splitlines()[1]) == len("[Ada]: ") + MAX_MESSAGE_CHARS
    )
