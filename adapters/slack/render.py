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

ZWSP = "\u200b"
_SPECIAL = re.compile(r"<(?=!)")
_AT_ALL = re.compile(r"(?<![\w@])@(?=(?:channel|here|everyone)\b)", re.IGNORECASE)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_DELIMITER_CELL = re.compile(r"^\s*:?-+:?\s*$")
_CELL_MARKUP = re.compile(r"\*\*|__|`")


def render(markdown: str) -> str:
    """What a Slack ``markdown`` block should hold to show ``markdown``."""
    return neutralise(_tables_as_code(markdown))


def neutralise(text: str) -> str:
    """Break every mass mention with a zero-width space."""
    return _AT_ALL.sub("@" + ZWSP, _SPECIAL.sub("<" + ZWSP, text))


def _tables_as_code(text: str) -> str:
    if "|" not in text:
        return text
    lines = text.split("\n")
    out: list[str] = []
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        match = _FENCE.match(line)
        if match is not None:
            marker = match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence) and not line.strip(" `~"):
                fence = None
        elif fence is None and i + 1 < len(lines) and _is_table_start(line, lines[i + 1]):
            end = i + 2
            while end < len(lines) and "|" in lines[end] and lines[end].strip():
                end += 1
            out.extend(_table(lines[i], lines[i + 1], lines[i + 2 : end]))
            i = end
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def _is_table_start(header: str, delimiter: str) -> bool:
    if "|" not in header or "|" not in delimiter:
        return False
    cells = _cells(delimiter)
    return bool(cells) and all(_DELIMITER_CELL.match(c) for c in cells) and len(_cells(header)) > 0


def _cells(row: str) -> list[str]:
    """The cells of a table row: split on unescaped pipes, outer pipes dropped."""
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    parts = re.split(r"(?<!\\)\|", row)
    return [p.replace("\\|", "|").strip() for p in parts]


def _table(header: str, delimiter: str, body: list[str]) -> list[str]:
    """A table as a code block: columns padded to their widest cell, right-aligned where asked."""
    rows = [[_CELL_MARKUP.sub("", c) for c in _cells(r)] for r in [header, *body]]
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    widths = [max(1, *(len(r[c]) for r in rows)) for c in range(width)]
    right = [c.strip().endswith(":") and not c.strip().startswith(":") for c in _cells(delimiter)]
    right = (right + [False] * width)[:width]

    def line(cells: list[str]) -> str:
        padded = [
            cell.rjust(w) if r else cell.ljust(w)
            for cell, w, r in zip(cells, widths, right, strict=True)
        ]
        return " | ".join(padded).rstrip()

    rule = "-+-".join("-" * w for w in widths)
    return ["```", line(rows[0]), rule, *(line(r) for r in rows[1:]), "```"]
