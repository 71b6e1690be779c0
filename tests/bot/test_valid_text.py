"""Text made valid Unicode at the edges: lone surrogates become U+FFFD, nothing else changes."""

from __future__ import annotations

import pytest

from bot.api.commands import ChooseModel, parse
from bot.api.inbound import Attachment, Author, Earlier, Inbound, ThreadKey
from bot.infra.text import valid_text
from bot.llm.model import TextPiece, ToolCallPiece


@pytest.mark.parametrize(
    ("raw", "valid"),
    [
        ("bad \ud800 end", "bad \ufffd end"),
        ("\udc00x", "\ufffdx"),
        ("\ud800\ud800", "\ufffd\ufffd"),
        ("\ud83d\ude00", "\U0001f600"),  # a pair left as two code points is joined
        ("plain, naïve, 😀", "plain, naïve, 😀"),
        ("", ""),
    ],
)
def test_lone_surrogates_become_the_replacement_character(raw: str, valid: str) -> None:
    assert valid_text(raw) == valid
    valid.encode("utf-8")


def test_valid_text_is_the_same_object() -> None:
    text = "x" * 1000
    assert valid_text(text) is text


def test_inbound_values_and_model_pieces_are_valid_as_they_are_made() -> None:
    who = Author("slack:U\ud800", "Ada \udfff", frozenset({"ops\ud800"}))
    assert (who.id, who.display_name, who.roles) == ("slack:U\ufffd", "Ada \ufffd", {"ops\ufffd"})
    inbound = Inbound(ThreadKey("t:1"), who, "hi \ud800", "ev\ud800")
    assert (inbound.text, inbound.event_id) == ("hi \ufffd", "ev\ufffd")
    assert Earlier("Bo\ud800", "was \udc00").text == "was \ufffd"
    assert Attachment("a\ud800.txt", "https://x/\ud800").name == "a\ufffd.txt"
    assert TextPiece("x\ud800").text == "x\ufffd"
    piece = ToolCallPiece(0, "c\ud800", "n\ud800", '{"a": "\ud800"}')
    assert (piece.id, piece.name, piece.arguments) == ("c\ufffd", "n\ufffd", '{"a": "\ufffd"}')
    assert parse("model gpt\ud800") == ChooseModel("gpt\ufffd")
