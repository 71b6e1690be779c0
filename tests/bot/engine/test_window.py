"""The context window's arithmetic: the answer's budget from what the prompt leaves, and how
full a window is in words."""

from __future__ import annotations

import pytest

from bot.engine.window import (
    MIN_OUTPUT_TOKENS,
    in_use,
    margin,
    output_budget,
    tools_tokens,
)
from bot.llm.model import ToolSpec


def test_without_a_cap_nothing_is_asked() -> None:
    assert output_budget(None, 128_000, 120_000) is None


def test_the_cap_holds_while_the_window_has_room() -> None:
    assert output_budget(4_000, 128_000, 10_000) == 4_000


def test_a_full_prompt_leaves_the_answer_what_remains_less_the_margin() -> None:
    # 32,000 - 28,000 - 640 (2% of the window)
    assert margin(32_000) == 640
    assert output_budget(8_000, 32_000, 28_000) == 3_360


def test_the_margin_is_never_below_its_floor() -> None:
    assert margin(8_000) == 256
    assert output_budget(4_000, 8_000, 6_000) == 8_000 - 6_000 - 256


def test_an_overfull_prompt_still_leaves_a_minimal_answer_within_the_cap() -> None:
    assert output_budget(4_000, 32_000, 40_000) == MIN_OUTPUT_TOKENS
    assert output_budget(100, 32_000, 40_000) == 100


def test_tools_count_by_their_descriptions() -> None:
    spec = ToolSpec("grep", "x" * 390, {"type": "object"})
    assert tools_tokens([spec]) == (4 + 390 + len('{"type": "object"}')) // 4


@pytest.mark.parametrize(
    ("tokens", "window", "words"),
    [
        (0, 128_000, "about 0% of 128,000 tokens"),
        (500, 128_000, "under 1% of 128,000 tokens"),
        (16_000, 128_000, "about 12% of 128,000 tokens"),
        (32_768, 32_768, "about 100% of 32,768 tokens"),
    ],
)
def test_how_full_the_window_is_in_words(tokens: int, window: int, words: str) -> None:
    assert in_use(tokens, window) == words
