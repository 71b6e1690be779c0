"""Our messages as OpenAI's Responses API input, and its streamed events as model pieces.

The request (``POST /responses``) asks for nothing to be kept on the provider's side
(``store: false``) and for the model's reasoning to come back encrypted
(``include: ["reasoning.encrypted_content"]``), so a thread keeps its own reasoning items: they
are stored on the :class:`AssistantMessage` they came before and sent back, as they came, in the
thread's later rounds and turns.

Input items, in the transcript's order:

* the system prompt is the request's ``instructions``; a :class:`SystemMessage` or a
  :class:`Summary` is a ``system`` message (the summary with the prefix Chat Completions uses);
* a :class:`UserMessage` is a ``user`` message with the same text as on the Chat Completions
  wire (``[Alice]: …``), its images as ``input_image`` parts;
* an :class:`AssistantMessage` is its reasoning items, then its text as an ``assistant``
  message, then a ``function_call`` per tool call (``call_id``: the call's wire id);
* a :class:`ToolResult` is a ``function_call_output`` answering that ``call_id``, marked as
  data as on the other wire.

OpenAI's models that do not reason refuse that request (HTTP 400); such a model is asked again
at once without it, and from then on (:func:`reasoning_refused`).

Events read (:class:`EventReader`): ``response.output_text.delta`` and
``response.refusal.delta`` (text), ``response.output_item.added`` (a function call's id and
name), ``response.function_call_arguments.delta`` (its arguments),
``response.output_item.done`` (a reasoning item; a call's arguments when no delta carried
them), ``response.completed`` / ``response.incomplete`` (usage and the end), ``error`` and
``response.failed`` (:class:`ResponseFailed`). A stream that ends before its completion event is
cut off.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from bot.errors import ModelStreamBroken
from bot.llm.messages import (
    AssistantMessage,
    Message,
    Summary,
    SystemMessage,
    ToolResult,
    Usage,
    UserMessage,
)
from bot.llm.model import (
    FinishPiece,
    ModelPiece,
    ModelRequest,
    ReasoningPiece,
    TextPiece,
    ToolCallPiece,
    ToolSpec,
    UsagePiece,
)
from bot.llm.wire import SUMMARY_PREFIX, as_data, user_content

WireDict = dict[str, Any]

ENCRYPTED_REASONING = "reasoning.encrypted_content"
MIN_OUTPUT_TOKENS = 16
"""The least ``max_output_tokens`` the Responses API accepts."""


class ResponseFailed(Exception):
    """An ``error`` event or a ``response.failed``: the server's code and words."""

    def __init__(self, code: str | None, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _user(message: UserMessage) -> WireDict:
    if not message.images:
        return {"role": "user", "content": user_content(message)}
    parts: list[WireDict] = [{"type": "input_text", "text": user_content(message)}]
    parts.extend({"type": "input_image", "image_url": url} for url in message.images)
    return {"role": "user", "content": parts}


def _assistant(message: AssistantMessage) -> list[WireDict]:
    items: list[WireDict] = [json.loads(item) for item in message.reasoning]
    if message.text:
        items.append({"role": "assistant", "content": message.text})
    items.extend(
        {
            "type": "function_call",
            "call_id": call.wire_id,
            "name": call.name,
            "arguments": call.arguments,
        }
        for call in message.tool_calls
    )
    return items


def input_items(messages: Iterable[Message]) -> list[WireDict]:
    """The ``input`` array of a request for ``messages`` (see the module)."""
    items: list[WireDict] = []
    call_wire_ids: dict[str, str] = {}
    for message in messages:
        match message:
            case SystemMessage(text=text):
                items.append({"role": "system", "content": text})
            case Summary(text=text):
                items.append({"role": "system", "content": SUMMARY_PREFIX + text})
            case UserMessage():
                items.append(_user(message))
            case AssistantMessage():
                call_wire_ids.update((c.id, c.wire_id) for c in message.tool_calls)
                items.extend(_assistant(message))
            case ToolResult(call_id=call_id, name=name, content=content):
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": call_wire_ids.get(call_id, call_id),
                        "output": as_data(name, content),
                    }
                )
    return items


def tool_item(spec: ToolSpec) -> WireDict:
    return {
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": dict(spec.parameters),
        "strict": False,
    }


def request_body(model: str, request: ModelRequest, *, reasoning: bool = True) -> bytes:
    """The JSON body of a streamed ``POST /responses`` for ``request``; without ``reasoning``,
    for a model that refuses to return it."""
    body: WireDict = {
        "model": model,
        "input": input_items(request.messages),
        "stream": True,
        "store": False,
    }
    if reasoning:
        body["include"] = [ENCRYPTED_REASONING]
    if request.system:
        body["instructions"] = request.system
    if request.tools:
        body["tools"] = [tool_item(spec) for spec in request.tools]
    if request.max_tokens is not None:
        body["max_output_tokens"] = max(MIN_OUTPUT_TOKENS, int(request.max_tokens))
    return _dumps(body)


def _dumps(body: WireDict) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def reasoning_refused(status: int, error: object) -> bool:
    """Whether an HTTP error says the model does not return encrypted reasoning (OpenAI's
    non-reasoning models answer 400 ``Encrypted content is not supported with this model``)."""
    if status != 400 or not isinstance(error, dict):
        return False
    message = str(error.get("message") or "").lower()
    return error.get("param") == "include" or "encrypted content" in message


def without_reasoning(body: bytes) -> bytes:
    """``body`` without its request for reasoning."""
    found: WireDict = json.loads(body)
    found.pop("include", None)
    return _dumps(found)


class EventReader:
    """Turns the events of one streamed response (plain JSON) into pieces."""

    def __init__(self) -> None:
        self.finished = False
        self.chunks = 0
        """Events read so far."""
        self._calls: set[int] = set()
        """Output positions of the function calls seen."""
        self._streamed: set[int] = set()
        """Those whose arguments came in deltas."""

    def read(self, event: object) -> list[ModelPiece]:
        self.chunks += 1
        if not isinstance(event, dict):
            raise ModelStreamBroken("the model server sent an event that is not an object")
        kind = event.get("type")
        match kind:
            case "response.output_text.delta" | "response.refusal.delta":
                delta = event.get("delta")
                return [TextPiece(delta)] if isinstance(delta, str) and delta else []
            case "response.function_call_arguments.delta":
                return self._arguments(event)
            case "response.output_item.added":
                return self._added(_item(event), _position(event))
            case "response.output_item.done":
                return self._done(_item(event), _position(event))
            case "response.completed" | "response.incomplete":
                return self._end(event)
            case "error":
                raise ResponseFailed(_text(event.get("code")), _said(event))
            case "response.failed":
                response = event.get("response")
                error = response.get("error") if isinstance(response, dict) else None
                error = error if isinstance(error, dict) else {}
                raise ResponseFailed(_text(error.get("code")), _said(error))
        return []

    def _arguments(self, event: Mapping[str, Any]) -> list[ModelPiece]:
        position, delta = _position(event), event.get("delta")
        if not isinstance(delta, str) or not delta:
            return []
        self._streamed.add(position)
        return [ToolCallPiece(position, None, None, delta)]

    def _added(self, item: Mapping[str, Any], position: int) -> list[ModelPiece]:
        if item.get("type") != "function_call":
            return []
        self._calls.add(position)
        arguments = item.get("arguments")
        if isinstance(arguments, str) and arguments:
            self._streamed.add(position)
        return [
            ToolCallPiece(
                position,
                _text(item.get("call_id")),
                _text(item.get("name")),
                arguments if isinstance(arguments, str) else "",
            )
        ]

    def _done(self, item: Mapping[str, Any], position: int) -> list[ModelPiece]:
        if item.get("type") == "reasoning":
            return [ReasoningPiece(json.dumps(item, ensure_ascii=False, separators=(",", ":")))]
        if item.get("type") != "function_call" or position in self._streamed:
            return []
        arguments = item.get("arguments")
        pieces: list[ModelPiece] = []
        if position not in self._calls:  # a call announced only when done
            self._calls.add(position)
            pieces.append(
                ToolCallPiece(position, _text(item.get("call_id")), _text(item.get("name")), "")
            )
        if isinstance(arguments, str) and arguments:
            self._streamed.add(position)
            pieces.append(ToolCallPiece(position, None, None, arguments))
        return pieces

    def _end(self, event: Mapping[str, Any]) -> list[ModelPiece]:
        self.finished = True
        response = event.get("response")
        response = response if isinstance(response, dict) else {}
        pieces: list[ModelPiece] = []
        if isinstance(usage := response.get("usage"), dict):
            pieces.append(UsagePiece(_usage(usage)))
        details = response.get("incomplete_details")
        if event.get("type") == "response.incomplete":
            cut = isinstance(details, dict) and details.get("reason") == "max_output_tokens"
            pieces.append(FinishPiece("length" if cut else "incomplete"))
        else:
            pieces.append(FinishPiece("tool_calls" if self._calls else "stop"))
        return pieces


def _item(event: Mapping[str, Any]) -> Mapping[str, Any]:
    item = event.get("item")
    if not isinstance(item, dict):
        raise ModelStreamBroken("the model server sent an output item that is not an object")
    return item


def _position(event: Mapping[str, Any]) -> int:
    position = event.get("output_index")
    return position if isinstance(position, int) and position >= 0 else 0


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _said(error: Mapping[str, Any]) -> str:
    return _text(error.get("message")) or "the model server reported an error"


def _usage(raw: Mapping[str, Any]) -> Usage:
    details = raw.get("input_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        prompt_tokens=_count(raw.get("input_tokens")),
        completion_tokens=_count(raw.get("output_tokens")),
        cached_tokens=_count(cached),
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0
