"""What a tool call did, in a few words for the people in the thread (the model gets it all)."""

from __future__ import annotations

SUMMARY_CHARS = 100
PREVIEW_LINES = 3
PREVIEW_CHARS = 300


def summarise(content: str, *, is_error: bool) -> str:
    """``exit code 0, 12 lines of output`` for a command; the first line of an error; the size
    of anything else."""
    lines = content.strip().splitlines()
    if not lines:
        return "no output"
    if is_error:
        return _cut(lines[0].removeprefix("error: "))
    last = lines[-1]
    if last.startswith("[") and last.endswith("]"):  # a command's status line
        body = _body(lines)
        return f"{_cut(last[1:-1])}, {_lines(len(body))} of output" if body else _cut(last[1:-1])
    return _cut(lines[0]) if len(lines) == 1 else _lines(len(lines))


def preview(content: str) -> str:
    """The first few lines of what it printed (without a command's status line)."""
    lines = content.strip().splitlines()
    body = (
        _body(lines) if lines and lines[-1].startswith("[") and lines[-1].endswith("]") else lines
    )
    text = "\n".join(body[:PREVIEW_LINES])
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _body(lines: list[str]) -> list[str]:
    return [line for line in lines[:-1] if line != "(no output)"]


def _lines(count: int) -> str:
    return f"{count} line{'s' * (count != 1)}"


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1].rstrip() + "…"
