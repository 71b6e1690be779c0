"""Our messages as the Chat Completions wire format: the only place that format is produced.

Conversion rules:

* the request's system prompt is the first message (``role: system``);
* a :class:`UserMessage` with an ``author_name`` is sent as ``"[Alice]: text"`` so the model
  knows who spoke in a shared thread (the default system prompt describes this form); one
  with images is a list of parts: that text, then an ``image_url`` part per image;
* an :class:`AssistantMessage`'s tool calls carry their ``wire_id`` (the provider's id when it
  was usable), never our own id;
* a :class:`ToolResult` answers the ``wire_id`` of the call whose own id is its ``call_id``
  (a result whose call is not in the transcript keeps its own ``call_id``);
* a :class:`Summary` becomes a system message ``"Summary of the earlier conversation: …"``.

:class:`WireEncoder` builds whole request bodies as bytes. Serialising a long history is a main
cost of each model call, so each message's JSON is cached by the message object (messages are
immutable), and the joined JSON of a conversation's leading messages is reused by its next
request: building the body of a 200-message thread costs tens of microseconds, not milliseconds.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.llm.messages import (
    AssistantMessage,
    Message,
    Summary,
    SystemMessage,
    ToolResult,
    UserMessage,
)
from bot.llm.model import ModelRequest, ToolSpec

WireDict = dict[str, Any]

SUMMARY_PREFIX = "Summary of the earlier conversation: "
DEFAULT_CACHE_SIZE = 8192


def user_content(message: UserMessage) -> str:
    """The text the model sees for a user message: prefixed with the author's name if known,
    after the thread's earlier messages when it brought them."""
    said = f"[{message.author_name}]: {message.text}" if message.author_name else message.text
    return f"{message.earlier}\n\n{said}" if message.earlier else said


def message_to_wire(message: Message, call_wire_ids: Mapping[str, str]) -> WireDict:
    """One message as a Chat Completions message dict.

    ``call_wire_ids`` maps our tool-call ids to their wire ids, for tool results.
    """
    match message:
        case SystemMessage(text=text):
            return {"role": "system", "content": text}
        case UserMessage(images=images) if images:
            parts: list[WireDict] = [{"type": "text", "text": user_content(message)}]
            parts.extend({"type": "image_url", "image_url": {"url": url}} for url in images)
            return {"role": "user", "content": parts}
        case UserMessage():
            return {"role": "user", "content": user_content(message)}
        case AssistantMessage(text=text, tool_calls=calls) if calls:
            return {
                "role": "assistant",
                "content": text or None,
                "tool_calls": [
                    {
                        "id": call.wire_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    }
                    for call in calls
                ],
            }
        case AssistantMessage(text=text):
            return {"role": "assistant", "content": text}
        case ToolResult(call_id=call_id, name=name, content=content):
            return {
                "role": "tool",
                "tool_call_id": call_wire_ids.get(call_id, call_id),
                "content": as_data(name, content),
            }
        case Summary(text=text):
            return {"role": "system", "content": SUMMARY_PREFIX + text}


def as_data(tool: str, content: str) -> str:
    """A tool's output as the model reads it: marked as data, which nothing inside can end early
    (the system prompt says that what is marked so is never an instruction).

    Inside, every ``<`` that starts what a reader could take for the mark, opening or closing,
    in any letter case and with any spaces (``</TOOL_OUTPUT >``, ``< / tool-output``), gets one
    more backslash after it (``<\\/tool_output``); :func:`from_data` takes it away again, so the
    text reads back exactly as it was."""
    inner = _MARK.sub(r"<\1\\\2", content)
    return f'<tool_output tool="{tool}">\n{inner}\n</tool_output>'


_GAP = "[\\s\u200b-\u200d\u2060\ufeff]*"
"""Spaces, and the invisible characters a reader skips over."""
_NAME = f"{_GAP}(?:/{_GAP})?tool[\\s_\\-\u200b-\u200d\u2060\ufeff]*output"
_MARK = re.compile(f"<(\\\\*)({_NAME})", re.IGNORECASE)
"""What could read as the mark, after a ``<`` and any backslashes: escaping adds one."""
_ESCAPED = re.compile(f"<(\\\\*)\\\\({_NAME})", re.IGNORECASE)
_DATA = re.compile(r'^<tool_output tool="[^"]*">\n(.*)\n</tool_output>$', re.S)


def from_data(content: str) -> str:
    """What :func:`as_data` wrapped (the text itself when it is not wrapped)."""
    match = _DATA.match(content)
    return content if match is None else _ESCAPED.sub(r"<\1\2", match.group(1))


def tool_to_wire(spec: ToolSpec) -> WireDict:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": dict(spec.parameters),
        },
    }


def to_wire(system: str, messages: Iterable[Message]) -> list[WireDict]:
    """The whole ``messages`` array of a request, without caching."""
    wire: list[WireDict] = [{"role": "system", "content": system}] if system else []
    call_wire_ids: dict[str, str] = {}
    for message in messages:
        if isinstance(message, AssistantMessage):
            call_wire_ids.update((c.id, c.wire_id) for c in message.tool_calls)
        wire.append(message_to_wire(message, call_wire_ids))
    return wire


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class _IdentityCache:
    """A bounded LRU of JSON text keyed by the identity of an immutable object.

    Each entry holds the object itself, so its id cannot be reused while the entry lives; the
    stored ``variant`` (a tool result's wire id) must match too.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[int, tuple[object, str | None, str]] = OrderedDict()

    def get(self, obj: object, variant: str | None) -> str | None:
        entry = self._entries.get(id(obj))
        if entry is None or entry[0] is not obj or entry[1] != variant:
            return None
        self._entries.move_to_end(id(obj))
        return entry[2]

    def put(self, obj: object, variant: str | None, text: str) -> None:
        self._entries[id(obj)] = (obj, variant, text)
        self._entries.move_to_end(id(obj))
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


@dataclass(slots=True)
class _Encoded:
    """The last encoding of one conversation: its messages and their joined JSON."""

    messages: list[Message]
    text: str
    ends: list[int]
    """``ends[i]``: the length of ``text`` covering ``messages[: i + 1]``."""
    calls: dict[str, str]
    """Our tool-call id to its wire id, for every call in ``messages``."""
    call_at: dict[str, int]
    """Our tool-call id to the position of the message that made the call."""

    def calls_before(self, keep: int) -> dict[str, str]:
        if keep == len(self.messages):
            return dict(self.calls)
        return {k: v for k, v in self.calls.items() if self.call_at[k] < keep}


def _common_prefix(old: Sequence[Message], new: Sequence[Message]) -> int:
    count = 0
    for a, b in zip(old, new, strict=False):
        if a is not b:
            break
        count += 1
    return count


class WireEncoder:
    """Builds Chat Completions request bodies, serialising each message once.

    Two caches: each message's JSON by the message object, and, per conversation (keyed by its
    first message), the joined JSON of the last request's messages, so the next request
    reuses the longest shared run of leading messages as one string.
    """

    def __init__(self, *, cache_size: int = DEFAULT_CACHE_SIZE, conversations: int = 64) -> None:
        self._cache = _IdentityCache(cache_size)
        self._conversations = conversations
        self._encoded: OrderedDict[int, _Encoded] = OrderedDict()

    @property
    def cached(self) -> int:
        return len(self._cache)

    def message_json(self, message: Message, call_wire_ids: Mapping[str, str]) -> str:
        variant = call_wire_ids.get(message.call_id) if isinstance(message, ToolResult) else None
        text = self._cache.get(message, variant)
        if text is None:
            text = _dumps(message_to_wire(message, call_wire_ids))
            self._cache.put(message, variant, text)
        return text

    def tools_json(self, tools: Sequence[ToolSpec]) -> str:
        parts: list[str] = []
        for spec in tools:
            text = self._cache.get(spec, None)
            if text is None:
                text = _dumps(tool_to_wire(spec))
                self._cache.put(spec, None, text)
            parts.append(text)
        return "[" + ",".join(parts) + "]"

    def messages_json(self, system: str, messages: Sequence[Message]) -> str:
        head = _dumps({"role": "system", "content": system}) if system else ""
        body = self._conversation_json(messages)
        return "[" + head + ("," if head and body else "") + body + "]"

    def _conversation_json(self, messages: Sequence[Message]) -> str:
        if not messages:
            return ""
        key = id(messages[0])
        last = self._encoded.get(key)
        if last is None or last.messages[0] is not messages[0]:
            last = _Encoded([], "", [], {}, {})
        keep = _common_prefix(last.messages, messages)
        calls = last.calls_before(keep)
        call_at = (
            {k: last.call_at[k] for k in calls} if keep < len(last.messages) else dict(last.call_at)
        )
        ends = last.ends[:keep]
        parts = [last.text[: ends[-1]]] if ends else []
        length = ends[-1] if ends else 0
        for position in range(keep, len(messages)):
            message = messages[position]
            if isinstance(message, AssistantMessage) and message.tool_calls:
                for call in message.tool_calls:
                    calls[call.id] = call.wire_id
                    call_at[call.id] = position
            text = self.message_json(message, calls)
            length += len(text) + (1 if length else 0)
            ends.append(length)
            parts.append(text)
        joined = ",".join(parts)
        self._encoded[key] = _Encoded(list(messages), joined, ends, calls, call_at)
        self._encoded.move_to_end(key)
        if len(self._encoded) > self._conversations:
            self._encoded.popitem(last=False)
        return joined

    def body(
        self,
        model: str,
        request: ModelRequest,
        *,
        stream: bool = True,
        max_tokens_field: str = "max_tokens",
    ) -> bytes:
        """The JSON body of a ``POST /chat/completions`` for ``request``.

        ``max_tokens_field`` names the output limit: ``max_tokens`` is understood by every
        OpenAI-compatible server, OpenAI's newer models want ``max_completion_tokens``. The
        request's sampling (``temperature``, ``top_p``, ``seed``, ``reasoning_effort``) is sent
        only where it is set.
        """
        parts = [
            '{"model":',
            _dumps(model),
            ',"messages":',
            self.messages_json(request.system, request.messages),
        ]
        if stream:
            parts.append(',"stream":true,"stream_options":{"include_usage":true}')
        if request.tools:
            parts.extend((',"tools":', self.tools_json(request.tools)))
        if request.max_tokens is not None:
            parts.extend((",", _dumps(max_tokens_field), ":", str(int(request.max_tokens))))
        for name, value in request.sampling.sent().items():
            parts.extend((",", _dumps(name), ":", _dumps(value)))
        parts.append("}")
        return "".join(parts).encode()
