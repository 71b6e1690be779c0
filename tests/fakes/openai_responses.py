"""The fake OpenAI server's ``POST /v1/responses``: OpenAI's Responses API, streamed.

It answers from the same script as ``/v1/chat/completions`` (:mod:`tests.fakes.openai_server`),
in the Responses API's Server-Sent Events (``event: TYPE`` and ``data: {…}``, no ``[DONE]``):

* :class:`Reply`: ``response.created``; a reasoning item (``output_item.added``, then
  ``output_item.done`` with ``encrypted_content``) when the request includes
  ``reasoning.encrypted_content``; a message item whose text arrives in several
  ``response.output_text.delta`` events; a ``function_call`` item per call whose arguments
  arrive in several ``response.function_call_arguments.delta`` events; ``response.completed``
  with the usage (``response.incomplete`` for a finish reason of ``length``). Each reasoning
  item issued is kept in ``FakeOpenAI.reasoning_issued``, for tests to find it sent back.
* a request that includes reasoning for a model that does not reason (``gpt-4o…``,
  ``gpt-4.1…``): HTTP 400, as OpenAI answers, before the script is read;
* :class:`Fault`, :class:`Raw` and :class:`Delay` as on the chat endpoint;
* :class:`CutOff`: the first ``after_chunks`` events, then the connection dropped or the body
  ended (a stream cut in the middle of an item);
* :class:`StreamError`: the first ``after_chunks`` events, then an ``error`` event;
* :class:`Failed` (here): the first ``after_chunks`` events, then ``response.failed``.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.fakes.openai_server import (
    CREATED,
    CutOff,
    Delay,
    Fault,
    Malformed,
    Raw,
    RecordedRequest,
    Reply,
    StreamError,
)

if TYPE_CHECKING:
    from tests.fakes.openai_server import FakeOpenAI

Event = dict[str, Any]
REASONING = "reasoning.encrypted_content"
PLAIN = ("gpt-4o", "gpt-4.1")
"""Models that do not reason: a request for their reasoning is refused, as OpenAI does."""
REFUSED = Fault(400, "Encrypted content is not supported with this model.", param="include")


@dataclass(frozen=True, slots=True)
class Failed:
    """Stream the first ``after_chunks`` events of ``reply``, then ``response.failed``."""

    reply: Reply
    after_chunks: int
    message: str = "The server had an error while processing your request. Sorry about that!"
    code: str | None = "server_error"


async def responses_endpoint(fake: FakeOpenAI, request: web.Request) -> web.StreamResponse:
    raw = await request.read()
    body: dict[str, Any] = json.loads(raw)
    record = RecordedRequest(body, dict(request.headers), len(raw), time.monotonic())
    async with fake._arrived:
        fake.requests.append(record)
        fake._arrived.notify_all()
    if REASONING in (body.get("include") or []) and str(body.get("model")).startswith(PLAIN):
        return fake._fault(REFUSED, record)
    response: Any = fake._next(body)
    while isinstance(response, Delay):
        if response.until is not None:
            await response.until.wait()
        if response.seconds > 0:
            await asyncio.sleep(response.seconds)
        response = response.response
    if isinstance(response, Fault):
        return fake._fault(response, record)
    if isinstance(response, Raw):
        return await fake._raw(request, response, record)
    assert not isinstance(response, Malformed), "Malformed is for the chat endpoint"
    events = Events(fake, body).of(response if isinstance(response, Reply) else response.reply)
    if isinstance(response, CutOff | StreamError | Failed):
        events = events[: response.after_chunks]
    if isinstance(response, StreamError):
        events.append(
            {"type": "error", "code": response.code, "message": response.message, "param": None}
        )
    if isinstance(response, Failed):
        failure = {"code": response.code, "message": response.message}
        events.append(
            {"type": "response.failed", "response": {"status": "failed", "error": failure}}
        )
    return await _send(request, events, record, response)


async def _send(
    request: web.Request, events: list[Event], record: RecordedRequest, response: object
) -> web.StreamResponse:
    out = web.StreamResponse(
        headers={"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}
    )
    await out.prepare(request)
    for number, event in enumerate(events):
        await out.write(
            f"event: {event['type']}\ndata: {json.dumps({**event, 'sequence_number': number})}\n\n".encode()
        )
        if record.first_byte_at is None:
            record.first_byte_at = time.monotonic()
    record.last_byte_at = time.monotonic()
    if isinstance(response, CutOff):
        if response.hold_until is not None:
            await response.hold_until.wait()
        if response.drop_connection and request.transport is not None:
            request.transport.close()
            return out
    await out.write_eof()
    return out


class Events:
    """The events of one streamed response."""

    def __init__(self, fake: FakeOpenAI, body: dict[str, Any]) -> None:
        self.fake = fake
        self.body = body
        self.id = f"resp_fake{next(fake._ids)}"
        self.output: list[Event] = []

    def of(self, reply: Reply) -> list[Event]:
        events: list[Event] = [
            {"type": "response.created", "response": self._response("in_progress")}
        ]
        if "reasoning.encrypted_content" in (self.body.get("include") or []):
            events += self._reasoning()
        if reply.text:
            events += self._message(reply)
        for call in reply.calls:
            events += self._call(call, reply)
        events.append(self._end(reply))
        return events

    def _response(self, status: str) -> Event:
        return {
            "id": self.id,
            "object": "response",
            "created_at": CREATED,
            "status": status,
            "model": str(self.body.get("model", "fake")),
            "output": list(self.output),
        }

    def _added(self, item: Event) -> Event:
        return {
            "type": "response.output_item.added",
            "output_index": len(self.output),
            "item": item,
        }

    def _done(self, item: Event) -> Event:
        self.output.append(item)
        return {
            "type": "response.output_item.done",
            "output_index": len(self.output) - 1,
            "item": item,
        }

    def _reasoning(self) -> list[Event]:
        number = next(self.fake._ids)
        item = {"type": "reasoning", "id": f"rs_fake{number}", "summary": []}
        done = {**item, "encrypted_content": f"gAAAA-encrypted-reasoning-{number}"}
        self.fake.reasoning_issued.append(done)
        return [self._added(item), self._done(done)]

    def _message(self, reply: Reply) -> list[Event]:
        item_id = f"msg_fake{next(self.fake._ids)}"
        item = {
            "type": "message",
            "id": item_id,
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        events = [self._added(item)]
        step, position = max(1, reply.text_chunk_chars), len(self.output)
        events += [
            {
                "type": "response.output_text.delta",
                "item_id": item_id,
                "output_index": position,
                "content_index": 0,
                "delta": reply.text[start : start + step],
            }
            for start in range(0, len(reply.text), step)
        ]
        part = {"type": "output_text", "text": reply.text, "annotations": []}
        events.append(self._done({**item, "status": "completed", "content": [part]}))
        return events

    def _call(self, call: Any, reply: Reply) -> list[Event]:
        number = next(self.fake._ids)
        args = call.arguments_text
        item = {
            "type": "function_call",
            "id": f"fc_fake{number}",
            "call_id": call.id or f"call_{number}",
            "name": call.name,
            "arguments": "",
            "status": "in_progress",
        }
        events = [self._added(item)]
        size = max(1, -(-len(args) // max(1, reply.argument_fragments)))
        events += [
            {
                "type": "response.function_call_arguments.delta",
                "item_id": item["id"],
                "output_index": len(self.output),
                "delta": args[i : i + size],
            }
            for i in range(0, len(args), size)
        ]
        events.append(self._done({**item, "arguments": args, "status": "completed"}))
        return events

    def _end(self, reply: Reply) -> Event:
        cut = reply.finish_reason == "length"
        response = self._response("incomplete" if cut else "completed")
        response["incomplete_details"] = {"reason": "max_output_tokens"} if cut else None
        response["usage"] = {
            "input_tokens": reply.prompt_tokens,
            "input_tokens_details": {"cached_tokens": reply.cached_tokens},
            "output_tokens": reply.completion_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        }
        kind = "response.incomplete" if cut else "response.completed"
        return {"type": kind, "response": response}
