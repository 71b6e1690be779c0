"""The context window's arithmetic: how long an answer a model call may ask for, and how full
a thread's window is.

A call asks for ``min(cap, window - prompt - margin)`` output tokens, and never fewer than
:data:`MIN_OUTPUT_TOKENS` (nor more than the cap): the cap is the configured
``max_output_tokens``, the prompt the engine's estimate of the request (the server's count of
the last request plus about four characters a token since), the margin what that estimate may
miss (:func:`margin`). Without a cap nothing is asked: the server gives what the window leaves.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from bot.engine.compact import CHARS_PER_TOKEN
from bot.llm.model import ToolSpec

MIN_OUTPUT_TOKENS = 256
"""The least an answer is allowed, however full the window (a fuller one is compacted first)."""
MIN_MARGIN_TOKENS = 256
MARGIN_SHARE = 0.02
"""The margin is this share of the window, and at least :data:`MIN_MARGIN_TOKENS`."""


def margin(window: int) -> int:
    """Tokens kept free for what the prompt's estimate may miss."""
    return max(MIN_MARGIN_TOKENS, int(window * MARGIN_SHARE))


def output_budget(cap: int | None, window: int, prompt_tokens: int) -> int | None:
    """The ``max_tokens`` of a call whose prompt holds about ``prompt_tokens`` (None: no cap
    is configured, nothing is sent)."""
    if cap is None:
        return None
    room = window - prompt_tokens - margin(window)
    return min(cap, max(room, MIN_OUTPUT_TOKENS))


SUMMARY_TOKENS = 2_000
"""Room kept for the summariser's instructions and the summary itself."""


def summary_input_chars(window: int) -> int:
    """How many characters of a thread a summary call may read within ``window``."""
    room = window - margin(window) - SUMMARY_TOKENS
    return max(room, MIN_OUTPUT_TOKENS) * CHARS_PER_TOKEN


def tools_tokens(specs: Sequence[ToolSpec]) -> int:
    """About how many tokens the tools' descriptions take in a request."""
    chars = sum(len(s.name) + len(s.description) + len(json.dumps(s.parameters)) for s in specs)
    return chars // CHARS_PER_TOKEN


def in_use(tokens: int, window: int) -> str:
    """How full the window is, for people: ``about 12% of 128,000 tokens``."""
    share = 100 * tokens / window
    shown = "under 1%" if 0 < share < 1 else f"about {round(share)}%"
    return f"{shown} of {window:,} tokens"
