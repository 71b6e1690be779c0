"""Markdown for Discord: headings, tables, underscores, mass mentions; code left alone."""

from __future__ import annotations

import pytest

from adapters.discord.render import render


@pytest.mark.parametrize(
    ("markdown", "shown"),
    [
        ("#### Deep\n##### Deeper\n###### Deepest", "### Deep\n### Deeper\n### Deepest"),
        ("# One\n## Two\n### Three\n#hashtag", "# One\n## Two\n### Three\n#hashtag"),
        (
            "this is __bold__ and __init__.py and snake__case__",
            "this is **bold** and **init**.py and snake__case__",
        ),
        ("`__x__` stays, __y__ does not", "`__x__` stays, **y** does not"),
        ("hi @everyone and @here", "hi @\u200beveryone and @\u200bhere"),
        ("`@everyone` in code", "`@everyone` in code"),
        ("```\n#### not a heading\n__x__ @here\n```", "```\n#### not a heading\n__x__ @here\n```"),
        ("~~~py\n| a | b |\n|---|---|\n~~~", "~~~py\n| a | b |\n|---|---|\n~~~"),
        ("a | b is not a table", "a | b is not a table"),
    ],
)
def test_discord_markdown(markdown: str, shown: str) -> None:
    assert render(markdown) == shown


def test_a_table_becomes_an_aligned_code_block() -> None:
    table = "Totals:\n\n| name | count |\n|:-----|------:|\n| apples | 3 |\n| kiwis | 12 |\n\nDone."
    assert render(table) == (
        "Totals:\n\n```\nname   | count\n-------+------\napples |     3\nkiwis  |    12\n```\n\nDone."
    )


def test_a_table_without_outer_pipes_and_with_escaped_pipes() -> None:
    assert render("a | b\n--- | ---\nx \\| y | z") == "```\na     | b\n------+--\nx | y | z\n```"


def test_a_table_still_streaming_renders_once_its_delimiter_row_arrives() -> None:
    assert render("| a | b |") == "| a | b |"
    assert render("| a | b |\n|---|---|") == "```\na | b\n--+--\n```"
