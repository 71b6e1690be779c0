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

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_DEEP_HEADING = re.compile(r"^( {0,3})#{4,6}(?=\s|$)")
_TABLE_DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_INLINE_CODE = re.compile(r"(`+)(?:.+?)(?<!`)\1(?!`)")
_UNDERSCORE_BOLD = re.compile(r"(?<![\w_\\])__(?=\S)(.+?)(?<=\S)__(?![\w_])")
_MASS_MENTION = re.compile(r"@(everyone|here)\b")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def render(markdown: str) -> str:
    lines = markdown.split("\n")
    out: list[str] = []
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        match = _FENCE.match(line)
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and not line.strip().lstrip(fence[0]):
                fence = None
            out.append(line)
        elif match:
            fence = match.group(1)
            out.append(line)
        elif _starts_table(lines, i):
            end = _table_end(lines, i)
            out.extend(_table_block(lines[i:end]))
            i = end
            continue
        else:
            out.append(_render_line(line))
        i += 1
    return "\n".join(out)


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


def _starts_table(lines: list[str], i: int) -> bool:
    return (
        i + 1 < len(lines)
        and "|" in lines[i]
        and "|" in lines[i + 1]
        and _TABLE_DELIMITER.match(lines[i + 1]) is not None
        and "-" in lines[i + 1]
    )


def _table_end(lines: list[str], start: int) -> int:
    end = start + 2
    while end < len(lines) and "|" in lines[end] and lines[end].strip():
        end += 1
    return end


def _cells(row: str) -> list[str]:
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(row)]


def _table_block(rows: list[str]) -> list[str]:
    """A Markdown table as a code block: the header, a rule, the rows, columns aligned."""
    table = [_cells(rows[0])] + [_cells(r) for r in rows[2:]]
    width = max(len(r) for r in table)
    table = [r + [""] * (width - len(r)) for r in table]
    sizes = [max(len(r[c]) for r in table) for c in range(width)]

    def line(cells: list[str]) -> str:
        return " | ".join(cell.ljust(size) for cell, size in zip(cells, sizes, strict=True)).rstrip()

    rule = "-+-".join("-" * size for size in sizes)
    body = [line(table[0]), rule, *(line(r) for r in table[1:])]
    return ["```", *(b.replace("```", "``\u200b`") for b in body), "```"]
