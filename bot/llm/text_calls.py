"""Tool calls a model wrote in its text, read back as calls (``THREADLINE_TEXT_TOOL_CALLS``).

Many local models write their tool calls into the answer's text when the server's tool-call
parser is off or does not match the model. With the setting on, the text is read as it streams,
and these forms become tool calls:

* ``<tool_call>{"name": …, "arguments": {…}}</tool_call>`` (Hermes, Qwen), anywhere, any number
  (a last one the answer ends without ``</tool_call>`` counts when its JSON is whole);
* ``<|python_tag|>{"name": …, "parameters": {…}}`` (Llama 3.x), several separated by ``;``;
* an answer that starts with such a JSON object, or an array of them (Llama 3.x without the tag);
* ``[TOOL_CALLS][{"name": …, "arguments": {…}}, …]`` and ``[TOOL_CALLS]name[ARGS]{…}`` (Mistral).

What could be the start of one is held back until it is known (a ``<`` at the end of a delta
waits for the next one), so a call's text is never shown. A call that cannot be read (JSON that
does not parse even without its trailing commas, arguments that are not an object, a call the
answer ended in the middle of) is still a call, with a ``problem``: the engine answers it with
that error, which the model reads, as it does a call with invalid JSON arguments.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from enum import Enum, auto

from bot.llm.call_json import (
    NAME_IN,
    TextCall,
    calls_in,
    cut_off,
    loads_lenient,
    named_call,
    unreadable,
)
from bot.llm.model import FinishPiece, ModelPiece, TextPiece, ToolCallPiece

TOOL_CALL = "<tool_call>"
PYTHON_TAG = "<|python_tag|>"
MISTRAL = "[TOOL_CALLS]"
MARKERS = (TOOL_CALL, PYTHON_TAG, MISTRAL)
_CLOSE = "</tool_call>"
_ARGS = "[ARGS]"
_CALL_ID = "[CALL_ID]"
_LONGEST = max(len(m) for m in MARKERS)
TEXT_CALL_INDEX = 1 << 20
"""Text calls are numbered from here, after any call the server itself parsed."""


Found = str | TextCall


class _Mode(Enum):
    START = auto()
    """Nothing but spaces yet: the answer may be a bare JSON call."""
    TEXT = auto()
    TAGGED = auto()
    """Inside ``<tool_call>``, up to ``</tool_call>``."""
    VALUE = auto()
    """Reading one JSON object or array."""
    MISTRAL = auto()
    """Just after ``[TOOL_CALLS]``."""
    NAMED = auto()
    """``[TOOL_CALLS]name`` up to ``[ARGS]``."""
    RAW = auto()
    """After ``<|python_tag|>``, something that is not JSON: read to the end, then refused."""
    AFTER = auto()
    """After a bare or tagged Llama call: another may follow, after ``;``."""


class _Kind(Enum):
    BARE = auto()
    PYTHON = auto()
    MISTRAL = auto()
    NAMED = auto()


class _JsonEnd:
    """Finds where one JSON object or array ends, as it arrives (strings and escapes heeded)."""

    __slots__ = ("depth", "escaped", "in_string", "parts")

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escaped = False
        self.parts: list[str] = []

    def end(self, text: str) -> int | None:
        """Where in ``text`` the value ends (just after), or None: it goes on."""
        for at, ch in enumerate(text):
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                elif ch == "\\":
                    self.escaped = True
                elif ch == '"':
                    self.in_string = False
            elif ch == '"':
                self.in_string = True
            elif ch in "{[":
                self.depth += 1
            elif ch in "}]":
                self.depth -= 1
                if self.depth <= 0:
                    return at + 1
        return None


class TextCallScanner:
    """Splits streamed text into what may be shown and the calls written in it."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._mode = _Mode.START
        self._kind = _Kind.BARE
        self._buf = ""
        self._lead = ""
        self._value: _JsonEnd | None = None
        self._name = ""
        self._id: str | None = None
        self._tagged_llama = False
        """Just after ``<|python_tag|>``: a call must follow."""
        self._bare_seen = False
        """The answer's start is ``{"`` (or ``[{"``): it may be a call, read to its end."""
        self._out: list[Found] = []
        self._scanned = 0

    def feed(self, text: str) -> list[Found]:
        """What ``text`` (the next delta) lets through: text to show, and whole calls."""
        self._buf += text
        while self._step():
            pass
        out, self._out = self._out, []
        return out

    def end(self) -> list[Found]:
        """The answer is over: what was held back, as text or as (possibly broken) calls."""
        self._finish()
        out = self._out
        self._reset()
        return out

    # --- the modes ---

    def _step(self) -> bool:
        """One move in the current mode; False when it needs more text."""
        match self._mode:
            case _Mode.TEXT:
                return self._text()
            case _Mode.START:
                return self._start()
            case _Mode.TAGGED:
                return self._tagged()
            case _Mode.VALUE:
                return self._read_value()
            case _Mode.MISTRAL:
                return self._mistral()
            case _Mode.NAMED:
                return self._named()
            case _Mode.AFTER:
                return self._after()
            case _Mode.RAW:
                return False

    def _text(self) -> bool:
        buf = self._buf
        if "<" not in buf and "[" not in buf:
            self._show(buf)
            self._buf = ""
            return False
        at, marker = _first_marker(buf)
        if marker:
            self._show(buf[:at])
            self._buf = buf[at + len(marker) :]
            self._open(marker)
            return True
        keep = _held_back(buf)
        self._show(buf[: len(buf) - keep])
        self._buf = buf[len(buf) - keep :]
        return False

    def _start(self) -> bool:
        buf = self._buf
        rest = buf.lstrip()
        if not rest:
            return False
        if rest[0] == "{" or (rest[0] == "[" and not MISTRAL.startswith(rest[: len(MISTRAL)])):
            self._lead = buf[: len(buf) - len(rest)]
            self._buf = rest
            self._begin_value(_Kind.BARE)
            return True
        if rest[0] == "[" and len(rest) < len(MISTRAL):
            return False  # may still be [TOOL_CALLS]
        self._mode = _Mode.TEXT
        return True

    def _open(self, marker: str) -> None:
        if marker == TOOL_CALL:
            self._mode, self._scanned = _Mode.TAGGED, 0
        elif marker == PYTHON_TAG:
            self._kind, self._mode = _Kind.PYTHON, _Mode.AFTER
            self._tagged_llama = True
        else:
            self._mode = _Mode.MISTRAL

    def _tagged(self) -> bool:
        at = self._buf.find(_CLOSE, max(0, self._scanned - len(_CLOSE)))
        if at < 0:
            self._scanned = len(self._buf)
            return False
        self._out.extend(calls_in(self._buf[:at]))
        self._buf = self._buf[at + len(_CLOSE) :]
        self._mode = _Mode.TEXT
        return True

    def _mistral(self) -> bool:
        rest = self._buf.lstrip()
        if not rest:
            return False
        self._buf = rest
        if rest[0] in "{[":
            self._begin_value(_Kind.MISTRAL)
        else:
            self._mode = _Mode.NAMED
        return True

    def _named(self) -> bool:
        at = self._buf.find(_ARGS)
        if at < 0:
            return False
        name, _, call_id = self._buf[:at].partition(_CALL_ID)
        self._name, self._id = name.strip(), call_id.strip() or None
        self._buf = self._buf[at + len(_ARGS) :].lstrip()
        self._begin_value(_Kind.NAMED)
        return True

    def _after(self) -> bool:
        """After a Llama call (or its tag): the next call, or the text that follows."""
        rest = self._buf.lstrip().lstrip(";").lstrip()
        if not rest:
            self._buf = ""
            return False
        self._buf = rest
        if rest[0] in "{[":
            self._begin_value(self._kind)
        elif self._tagged_llama:  # <|python_tag|> followed by something that is not JSON
            self._mode = _Mode.RAW
        else:
            self._mode = _Mode.TEXT
        self._tagged_llama = False
        return True

    def _begin_value(self, kind: _Kind) -> None:
        self._kind, self._mode, self._value = kind, _Mode.VALUE, _JsonEnd()
        self._bare_seen = False

    def _read_value(self) -> bool:
        value = self._value
        assert value is not None
        buf = self._buf
        if self._kind is _Kind.BARE and not self._bare_seen:
            seen = _bare_start("".join(value.parts) + buf)
            if seen is False:
                self._buf = "".join(value.parts) + buf  # read again as text
                return self._not_a_call("")
            self._bare_seen = seen is True
        at = value.end(buf)
        if at is None:
            value.parts.append(buf)
            self._buf = ""
            return False
        raw = "".join(value.parts) + buf[:at]
        self._buf, self._value = buf[at:], None
        return self._value_read(raw)

    def _value_read(self, raw: str) -> bool:
        kind = self._kind
        if kind is _Kind.NAMED:
            self._out.append(named_call(self._name, self._id, raw))
            self._mode = _Mode.TEXT
            return True
        if kind is _Kind.BARE and not _bare_call(raw):
            return self._not_a_call(raw)
        self._out.extend(calls_in(raw))
        self._mode = _Mode.TEXT if kind is _Kind.MISTRAL else _Mode.AFTER
        return True

    def _not_a_call(self, raw: str) -> bool:
        """The answer's start was not a call: shown as the text it is."""
        self._show(self._lead + raw)
        self._lead, self._value = "", None
        self._mode = _Mode.TEXT
        return True

    def _finish(self) -> None:
        """The end of the answer in whatever mode it was."""
        buf = self._buf
        match self._mode:
            case _Mode.START | _Mode.TEXT:
                self._show(buf)
            case _Mode.TAGGED:
                self._out.extend(calls_in(buf, closed=False))
            case _Mode.VALUE:
                raw = "".join(self._value.parts if self._value else ()) + buf
                if self._kind is _Kind.BARE and not NAME_IN.search(raw):
                    self._show(self._lead + raw)
                elif self._kind is _Kind.NAMED:
                    self._out.append(cut_off(raw, name=self._name))
                else:
                    self._out.append(cut_off(raw))
            case _Mode.MISTRAL | _Mode.NAMED:
                self._out.append(cut_off(MISTRAL + buf))
            case _Mode.RAW:
                self._out.append(unreadable(buf, "it is not JSON"))
            case _Mode.AFTER:
                if self._tagged_llama:
                    self._out.append(cut_off(PYTHON_TAG + buf))

    def _show(self, text: str) -> None:
        if text:
            self._out.append(text)


# --- where a call may start ---


def _first_marker(buf: str) -> tuple[int, str]:
    best, found = len(buf), ""
    for marker in MARKERS:
        at = buf.find(marker, 0, best + len(marker))
        if 0 <= at < best:
            best, found = at, marker
    return best, found


def _held_back(buf: str) -> int:
    """How much of the end of ``buf`` may be the start of a marker."""
    for at in range(max(0, len(buf) - _LONGEST + 1), len(buf)):
        if buf[at] in "<[" and any(m.startswith(buf[at:]) for m in MARKERS):
            return len(buf) - at
    return 0


def _bare_start(raw: str) -> bool | None:
    """Whether an answer starting with ``raw`` may still be a JSON call (None: too short to say):
    ``{"`` or ``[{"``, spaces aside."""
    rest = raw.lstrip()
    if rest.startswith("["):
        rest = rest[1:].lstrip()
        if not rest:
            return None
        if rest[0] != "{":
            return False
    rest = rest[1:].lstrip()
    if not rest:
        return None
    return rest[0] == '"'


def _bare_call(raw: str) -> bool:
    """A whole JSON value that is a call (or a list of calls): a name and its arguments or
    parameters, both keys present (a bare object of other data is text)."""
    try:
        value = loads_lenient(raw)
    except ValueError:
        return NAME_IN.search(raw) is not None  # broken, but meant as a call
    items = value if isinstance(value, list) and value else [value]
    return all(
        isinstance(i, dict)
        and isinstance(i.get("name"), str)
        and ("arguments" in i or "parameters" in i)
        for i in items
    )


# --- over a model's stream ---


async def with_text_calls(pieces: AsyncIterator[ModelPiece]) -> AsyncIterator[ModelPiece]:
    """``pieces`` with the calls written in their text turned into tool-call pieces, and that
    text held back; everything else unchanged."""
    scanner = TextCallScanner()
    count = 0
    try:
        async for piece in pieces:
            if isinstance(piece, TextPiece):
                found = scanner.feed(piece.text)
            elif isinstance(piece, FinishPiece):
                found = scanner.end()
            else:
                yield piece
                continue
            for item in found:
                if isinstance(item, str):
                    yield TextPiece(item)
                else:
                    yield _piece(TEXT_CALL_INDEX + count, item)
                    count += 1
            if isinstance(piece, FinishPiece):
                yield piece
        for item in scanner.end():  # a stream without a finish reason
            if isinstance(item, str):
                yield TextPiece(item)
            else:
                yield _piece(TEXT_CALL_INDEX + count, item)
                count += 1
    finally:
        close = getattr(pieces, "aclose", None)
        if close is not None:
            await close()


def _piece(index: int, call: TextCall) -> ToolCallPiece:
    return ToolCallPiece(index, call.id, call.name, call.arguments, problem=call.problem)
