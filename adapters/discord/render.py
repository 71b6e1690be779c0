"""The model's Markdown, adjusted for what Discord renders.

- Headings go to ``###`` at most (``####`` and deeper show as plain text on Discord).
- Tables (which Discord does not render) become code blocks with aligned columns.
- ``__bold__`` becomes ``**bold**``: on Discord ``__x__`` is underline.
- ``@everyone`` and ``@here`` get a zero-width space, so they read the same and never ping
  (every send also carries ``allowed_mentions`` that forbid mass and role pings).

Code blocks and inline code are left exactly as written. The function is pure and works on a
growing text (a table turns into a code block once its delimiter row has arrived).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bot.api.kit import map_prose

_DEEP_HEADING = re.compile(r"^( {0,3})#{4,6}(?=\s|$)")
_INLINE_CODE = re.compile(r"(`+)(?:.+?)(?<!`)\1(?!`)")
_UNDERSCORE_BOLD = re.compile(r"(?<![\w_\\])__(?=\S)(.+?)(?<=\S)__(?![\w_])")
_MASS_MENTION = re.compile(r"@(everyone|here)\b")


def render(markdown: str) -> str:
    return map_prose(markdown, _render_line)


def _render_line(line: str) -> str:
    line = _DEEP_HEADING.sub(r"\1###", line)
    return _outside_inline_code(line, _inline)


def _inline(text: str) -> str:
    text = _UNDERSCORE_BOLD.sub(r"**\1**", text)
    return _MASS_MENTION.sub("@\u200b\\1", text)


def _outside_inline_code(line: str, change: Callable[[str], str]) -> str:
    parts: list[str] = []
    last = 0
    for match in _INLINE_CODE.finditer(line):
        parts.append(change(line[last : match.start()]))
        parts.append(match.group(0))
        last = match.end()
    parts.append(change(line[last:]))
    return "".join(parts)
