"""The model's Markdown → the Markdown of a Slack ``markdown`` block.

Replies go out as a ``markdown`` block, which renders standard Markdown (bold, italics,
strike-through, links, lists, headings, quotes, inline code and fenced code) — so the model's
text passes through nearly unchanged, and ``& < >`` need no escaping. Two things change:

- GFM tables, which the block does not render, become fenced code blocks with aligned columns;
- mass mentions the model writes never notify anyone: ``<!channel>``, ``<!here>``,
  ``<!everyone>``, ``<!subteam^…>`` (any ``<!…>``) and ``@channel``, ``@here``, ``@everyone``
  get a zero-width space after ``<`` or ``@``. This applies inside code too: a stray ping
  costs more than an invisible character in copied code.
"""

from __future__ import annotations

import re

from bot.api.kit import map_prose

ZWSP = "\u200b"
_SPECIAL = re.compile(r"<(?=!)")
_AT_ALL = re.compile(r"(?<![\w@])@(?=(?:channel|here|everyone)\b)", re.IGNORECASE)


def render(markdown: str) -> str:
    """What a Slack ``markdown`` block should hold to show ``markdown``."""
    return neutralise(map_prose(markdown) if "|" in markdown else markdown)


def neutralise(text: str) -> str:
    """Break every mass mention with a zero-width space."""
    return _AT_ALL.sub("@" + ZWSP, _SPECIAL.sub("<" + ZWSP, text))
