"""Tables as code blocks and prose-only transforms, shared by the platform renderers."""

from __future__ import annotations

from bot.present.markdown import map_prose


def test_tables_become_aligned_code_and_code_is_left_alone() -> None:
    text = "| item | qty |\n|---|--:|\n| **tea** | 2 |\n| cake | 10 |\n\n```\n| a | b |\n|---|---|\n```"
    assert map_prose(text) == (
        "```\nitem | qty\n-----+----\ntea  |   2\ncake |  10\n```\n\n```\n| a | b |\n|---|---|\n```"
    )


def test_the_line_transform_skips_fenced_code_and_tables() -> None:
    text = "hello\n~~~\nhello\n~~~\n| hello |\n|---|\n| hello |\nhello"
    assert (
        map_prose(text, str.upper) == "HELLO\n~~~\nhello\n~~~\n```\nhello\n-----\nhello\n```\nHELLO"
    )


def test_an_unclosed_fence_keeps_the_rest_as_code() -> None:
    assert map_prose("a\n```py\nx = 1", str.upper) == "A\n```py\nx = 1"
