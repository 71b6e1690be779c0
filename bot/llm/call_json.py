"""Reading the JSON of a tool call a model wrote as text (see :mod:`bot.llm.text_calls`).

A call is ``{"name": …, "arguments": {…}}`` (``parameters`` for Llama; ``arguments`` may be
JSON text; OpenAI's own ``{"type": "function", "function": {…}}`` too), or a list of them. JSON
with trailing commas is read without them, the one repair that cannot change what was meant;
anything else that cannot be read becomes a :class:`TextCall` with a ``problem``: the error
the model is answered with.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_EXCERPT = 200
NAME_IN = re.compile(r'"name"\s*:\s*"([A-Za-z0-9_-]{1,64})"')
"""A call's name in its JSON text, however broken the rest is."""
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
UNREADABLE = "unreadable_call"
"""The name of a call whose own name could not be read."""


@dataclass(frozen=True, slots=True)
class TextCall:
    """A tool call read from the text: its arguments as JSON text, or why it cannot run."""

    name: str
    arguments: str = "{}"
    id: str | None = None
    problem: str = ""


def calls_in(body: str, *, closed: bool = True) -> list[TextCall]:
    """The calls in one call's JSON text (an object, or an array of them)."""
    if not body.strip():
        return [cut_off(body) if not closed else unreadable(body, "it is empty")]
    try:
        value = loads_lenient(body)
    except ValueError as exc:
        return [cut_off(body) if not closed else unreadable(body, str(exc))]
    items = value if isinstance(value, list) else [value]
    if not items:
        return [unreadable(body, "the list of calls is empty")]
    return [_call(item, body) for item in items]


def _call(item: object, body: str) -> TextCall:
    if not isinstance(item, dict):
        return unreadable(body, "a call must be a JSON object")
    function = item.get("function")
    if isinstance(function, dict):  # {"type": "function", "function": {...}}
        item = {**function, "id": item.get("id")}
    name = item.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        return unreadable(body, 'it has no "name" a tool can have')
    raw = item.get("arguments", item.get("parameters", {}))
    call_id = item.get("id") if isinstance(item.get("id"), str) and item.get("id") else None
    return _with_arguments(name, call_id, raw, body)


def named_call(name: str, call_id: str | None, raw: str) -> TextCall:
    """A call given as its name and its arguments' JSON text (``[TOOL_CALLS]name[ARGS]{…}``)."""
    if not _NAME.fullmatch(name):
        return unreadable(f"{name} {raw}", "the tool's name is not one a tool can have")
    try:
        arguments = loads_lenient(raw)
    except ValueError as exc:
        return unreadable(raw, str(exc), name=name)
    return _with_arguments(name, call_id, arguments, raw)


def _with_arguments(name: str, call_id: str | None, raw: Any, body: str) -> TextCall:
    if isinstance(raw, str):  # arguments given as JSON text
        try:
            raw = loads_lenient(raw) if raw.strip() else {}
        except ValueError as exc:
            return unreadable(body, f"its arguments are not JSON: {exc}", name=name)
    if not isinstance(raw, dict):
        return unreadable(body, "its arguments must be a JSON object", name=name)
    return TextCall(name, json.dumps(raw, ensure_ascii=False), call_id)


def loads_lenient(text: str) -> Any:
    """``text`` as JSON; when that fails, once more without its trailing commas (``[1, 2,]``,
    ``{"a": 1,}``), the one repair that cannot change what was meant."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        first = exc
    repaired = drop_trailing_commas(text)
    if repaired != text:
        try:
            return json.loads(repaired)
        except json.JSONDecodeError:
            pass
    raise ValueError(f"{first.msg} at line {first.lineno} column {first.colno}")


def drop_trailing_commas(text: str) -> str:
    """``text`` without the commas (outside strings) that only spaces separate from a closing
    ``}`` or ``]``."""
    if "," not in text:
        return text
    out: list[str] = []
    in_string = escaped = False
    for at, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "," and text[at + 1 :].lstrip()[:1] in ("}", "]"):
            continue
        out.append(ch)
    return "".join(out)


def unreadable(body: str, why: str, *, name: str | None = None) -> TextCall:
    return TextCall(
        _name_of(body) if name is None else name,
        problem=(
            f"error: the tool call you wrote as text could not be read ({why}), so it was not "
            f"run: {_excerpt(body)}. Write it again as JSON: "
            '{"name": "<tool>", "arguments": {…}}.'
        ),
    )


def cut_off(body: str, *, name: str | None = None) -> TextCall:
    """A call the answer ended in the middle of."""
    return TextCall(
        _name_of(body) if name is None or not _NAME.fullmatch(name) else name,
        problem=(
            "error: your answer ended in the middle of a tool call written as text, so it was "
            f"not run: {_excerpt(body)}. Write the whole call again."
        ),
    )


def _name_of(body: str) -> str:
    found = NAME_IN.search(body)
    return found.group(1) if found else UNREADABLE


def _excerpt(body: str) -> str:
    text = " ".join(body.split())
    return repr(text if len(text) <= _EXCERPT else text[: _EXCERPT - 1] + "…")
