"""Markdown helpers every platform needs: walk the lines outside fenced code, and turn GFM
tables (which neither Slack's markdown block nor Discord renders) into aligned code blocks.

Works on a growing text too: a table turns into a code block once its delimiter row arrives.
"""

from __future__ import annotations

import re
from collections.abc import Callable

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_DELIMITER_CELL = re.compile(r"^\s*:?-+:?\s*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_CELL_MARKUP = re.compile(r"\*\*|__|`")


def map_prose(markdown: str, line: Callable[[str], str] = lambda text: text) -> str:
    """``markdown`` with tables as code blocks and ``line`` applied to every line outside code."""
    lines = markdown.split("\n")
    out: list[str] = []
    fence: str | None = None
    i = 0
    while i < len(lines):
        text = lines[i]
        match = FENCE.match(text)
        if match is not None:
            marker = match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence) and not text.strip(" `~"):
                fence = None
            out.append(text)
        elif fence is not None:
            out.append(text)
        elif i + 1 < len(lines) and _is_table_start(text, lines[i + 1]):
            end = i + 2
            while end < len(lines) and "|" in lines[end] and lines[end].strip():
                end += 1
            out.extend(table_as_code(lines[i], lines[i + 1], lines[i + 2 : end]))
            i = end
            continue
        else:
            out.append(line(text))
        i += 1
    return "\n".join(out)


def _is_table_start(header: str, delimiter: str) -> bool:
    if "|" not in header or "|" not in delimiter or "-" not in delimiter:
        return False
    cells = cells_of(delimiter)
    return bool(cells) and all(_DELIMITER_CELL.match(c) for c in cells)


def cells_of(row: str) -> list[str]:
    """The cells of a table row: split on unescaped pipes, outer pipes dropped."""
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return [c.replace("\\|", "|").strip() for c in _CELL_SPLIT.split(row)]


def table_as_code(header: str, delimiter: str, body: list[str]) -> list[str]:
    """A table as a code block: columns padded to their widest cell, right-aligned where the
    delimiter says so, emphasis markers dropped (they would show literally in code)."""
    rows = [[_CELL_MARKUP.sub("", c) for c in cells_of(r)] for r in [header, *body]]
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    widths = [max(1, *(len(r[c]) for r in rows)) for c in range(width)]
    right = [c.endswith(":") and not c.startswith(":") for c in cells_of(delimiter)]
    right = (right + [False] * width)[:width]

    def line(cells: list[str]) -> str:
        padded = [
            cell.rjust(w) if r else cell.ljust(w)
            for cell, w, r in zip(cells, widths, right, strict=True)
        ]
        return " | ".join(padded).rstrip()

    rule = "-+-".join("-" * w for w in widths)
    return ["```", line(rows[0]), rule, *(line(r) for r in rows[1:]), "```"]
