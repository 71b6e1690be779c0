"""A fake OpenAI-compatible Chat Completions server on loopback, for tests and benchmarks.

``POST /v1/chat/completions`` answers from a queue of scripted responses (then from an
optional default responder), streaming Server-Sent Events shaped like OpenAI's:

* :class:`Reply`: text and/or tool calls, after optional reasoning (deltas of
  ``reasoning_content`` as vLLM and DeepSeek send them, or ``reasoning`` as OpenRouter does).
  Text arrives in several content deltas; each tool
  call's arguments arrive in several fragments sharing one ``index``, with ``id``, ``type`` and
  ``function.name`` only in the first. A finish chunk, then a usage chunk (``choices: []``)
  when the request asked for ``stream_options.include_usage``, then ``data: [DONE]``.
* :class:`Fault`: an HTTP error with OpenAI's error body and optional ``Retry-After`` headers.
* :class:`CutOff`: a reply that stops after some chunks, by dropping the connection or by
  ending the body cleanly without a finish reason or ``[DONE]``.
* :class:`Malformed`: a reply in which one chunk is not valid JSON.
* :class:`StreamError`: a reply that stops with an ``{"error": …}`` event after some chunks.
* :class:`Raw`: a body of Server-Sent Events given byte for byte (broken ones included).
* :class:`Delay`: any of the above, after waiting for an event and/or some seconds.
* :class:`Hang`: a server that takes the request and then sends nothing: no byte at all, or
  its headers and a first chunk with no token in it, until an event is set.

Non-streaming requests (``"stream": false``) get a ``chat.completion`` object for a Reply.
``POST /v1/responses`` answers from the same script in the Responses API's streamed events
(:mod:`tests.fakes.openai_responses`).
``GET /v1/models`` lists ``models``.
Every request is recorded with its parsed body (:attr:`RecordedRequest.params`: the sampling
and output limit it asked for), headers and server-side monotonic timestamps (received, first
byte sent, last byte sent).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from aiohttp import web

CREATED = 1_700_000_000
PARAMS = (
    "temperature",
    "top_p",
    "seed",
    "reasoning_effort",
    "max_tokens",
    "max_completion_tokens",
)
"""The request fields :attr:`RecordedRequest.params` gathers."""


@dataclass(frozen=True, slots=True)
class FakeCall:
    """A tool call the fake model makes; ``id`` defaults to ``call_<n>``."""

    name: str
    arguments: str | Mapping[str, Any]
    id: str | None = None

    @property
    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


@dataclass(frozen=True, slots=True)
class Reply:
    text: str = ""
    calls: Sequence[FakeCall] = ()
    prompt_tokens: int = 50
    completion_tokens: int = 10
    cached_tokens: int = 0
    finish_reason: str | None = None
    """Defaults to ``tool_calls`` when there are calls, else ``stop``."""
    text_chunk_chars: int = 6
    argument_fragments: int = 3
    reasoning: str = ""
    """Streamed before the text, in deltas of ``reasoning_field``."""
    reasoning_field: str = "reasoning_content"
    hold_after_reasoning: asyncio.Event | None = None
    """Wait for this once the reasoning is sent (a model thinking for a while), then go on."""


@dataclass(frozen=True, slots=True)
class Fault:
    status: int
    message: str
    type: str = "invalid_request_error"
    code: str | None = None
    param: str | None = None
    retry_after: str | None = None
    retry_after_ms: str | None = None

    @classmethod
    def server_error(cls, status: int = 500) -> Fault:
        return cls(
            status,
            "The server had an error while processing your request. Sorry about that!",
            type="server_error",
        )

    @classmethod
    def rate_limited(
        cls, retry_after: str | None = None, retry_after_ms: str | None = None
    ) -> Fault:
        return cls(
            429,
            "Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3, "
            "Requested 1. Please try again in 20s.",
            type="requests",
            code="rate_limit_exceeded",
            retry_after=retry_after,
            retry_after_ms=retry_after_ms,
        )

    @classmethod
    def no_quota(cls) -> Fault:
        return cls(
            429,
            "You exceeded your current quota, please check your plan and billing details.",
            type="insufficient_quota",
            code="insufficient_quota",
        )

    @classmethod
    def bad_key(cls, shown_key: str) -> Fault:
        return cls(
            401,
            f"Incorrect API key provided: {shown_key}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            code="invalid_api_key",
        )

    @classmethod
    def unknown_model(cls, model: str) -> Fault:
        return cls(
            404,
            f"The model `{model}` does not exist or you do not have access to it.",
            code="model_not_found",
        )

    @classmethod
    def context_overflow(cls) -> Fault:
        return cls(
            400,
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 131072 tokens. Please reduce the length of the messages.",
            code="context_length_exceeded",
            param="messages",
        )

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


@dataclass(frozen=True, slots=True)
class CutOff:
    """Send the first ``after_chunks`` chunks of ``reply``, then stop."""

    reply: Reply
    after_chunks: int
    drop_connection: bool = True
    hold_until: asyncio.Event | None = None
    """Wait for this after the chunks are sent (a server that stalls mid-answer), then stop."""
    """Drop the TCP connection (an incomplete body); else end the body cleanly."""


@dataclass(frozen=True, slots=True)
class Malformed:
    """Stream ``reply`` with chunk number ``at_chunk`` (0-based) replaced by broken JSON."""

    reply: Reply
    at_chunk: int = 1


@dataclass(frozen=True, slots=True)
class StreamError:
    """Stream the first ``after_chunks`` chunks of ``reply``, then an error event and the end of
    the body, as OpenAI does when a request fails after its response has started."""

    reply: Reply
    after_chunks: int
    message: str = "The server had an error while processing your request. Sorry about that!"
    type: str = "server_error"
    code: str | None = None


@dataclass(frozen=True, slots=True)
class Raw:
    """Stream exactly ``body`` (anything: events that are not JSON, events cut in half), then end
    the body cleanly, or drop the connection."""

    body: bytes
    drop_connection: bool = False
    content_type: str = "text/event-stream; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Delay:
    """Answer with ``response`` once ``until`` is set (if given) and ``seconds`` have passed."""

    response: Response
    seconds: float = 0.0
    until: asyncio.Event | None = None


@dataclass(frozen=True, slots=True)
class Hang:
    """Send nothing (``before="byte"``: not even the headers) or only the headers and the
    first chunk, which holds no token (``before="token"``), until ``until`` is set; then
    drop the connection."""

    until: asyncio.Event
    before: Literal["byte", "token"] = "byte"

    def script(self) -> Response:
        if self.before == "byte":
            return Delay(CutOff(Reply("never sent"), 0), until=self.until)
        return CutOff(Reply("never sent"), 1, hold_until=self.until)


Response = Reply | Fault | CutOff | Malformed | StreamError | Raw | Delay | Hang
Responder = Callable[[dict[str, Any]], Response]


@dataclass(slots=True)
class RecordedRequest:
    body: dict[str, Any]
    headers: dict[str, str]
    raw_size: int
    received_at: float
    """``time.monotonic()`` when the whole body had been read."""
    first_byte_at: float | None = None
    last_byte_at: float | None = None

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.body.get("messages", [])
        return messages

    @property
    def params(self) -> dict[str, Any]:
        """The sampling and output limit the request asked for (the fields it sent)."""
        return {k: self.body[k] for k in PARAMS if k in self.body}


@dataclass
class FakeOpenAI:
    """Start with ``await start()``, stop with ``await stop()``; ``base_url`` ends in ``/v1``."""

    default: Responder | None = None
    host: str = "127.0.0.1"
    models: tuple[str, ...] = ("gpt-4o-mini",)
    script: deque[Response] = field(default_factory=deque)
    requests: list[RecordedRequest] = field(default_factory=list)
    reasoning_issued: list[dict[str, Any]] = field(default_factory=list)
    """The reasoning items ``/v1/responses`` answered with, in order."""
    _runner: web.AppRunner | None = None
    _port: int = 0
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _arrived: asyncio.Condition = field(default_factory=asyncio.Condition)

    # --- lifecycle ---

    async def start(self) -> None:
        from tests.fakes.openai_responses import responses_endpoint

        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/responses", partial(responses_endpoint, self))
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, 0).start()
        self._port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeOpenAI:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self._port}/v1"

    # --- scripting ---

    def push(self, *responses: Response) -> None:
        self.script.extend(responses)

    async def wait_for_requests(self, count: int, within: float = 5.0) -> list[RecordedRequest]:
        """Wait until ``count`` requests have arrived (at most ``within`` seconds)."""
        async with asyncio.timeout(within), self._arrived:
            await self._arrived.wait_for(lambda: len(self.requests) >= count)
        return self.requests

    def _next(self, body: dict[str, Any]) -> Response:
        if self.script:
            return self.script.popleft()
        if self.default is not None:
            return self.default(body)
        return Fault(400, "FakeOpenAI has no scripted response left for this request")

    # --- the endpoints ---

    async def _models(self, request: web.Request) -> web.Response:
        listed = [
            {"id": name, "object": "model", "created": CREATED, "owned_by": "fake"}
            for name in self.models
        ]
        return web.json_response({"object": "list", "data": listed})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        received = time.monotonic()
        body: dict[str, Any] = json.loads(raw)
        record = RecordedRequest(body, dict(request.headers), len(raw), received)
        async with self._arrived:
            self.requests.append(record)
            self._arrived.notify_all()
        response = self._next(body)
        if isinstance(response, Hang):
            response = response.script()
        while isinstance(response, Delay):
            if response.until is not None:
                await response.until.wait()
            if response.seconds > 0:
                await asyncio.sleep(response.seconds)
            response = response.response
        if isinstance(response, Fault):
            return self._fault(response, record)
        if isinstance(response, Raw):
            return await self._raw(request, response, record)
        if not body.get("stream"):
            reply = response if isinstance(response, Reply) else response.reply
            record.first_byte_at = record.last_byte_at = time.monotonic()
            return web.json_response(self._completion(body, reply))
        return await self._stream(request, body, response, record)

    def _fault(self, fault: Fault, record: RecordedRequest) -> web.Response:
        headers = {"x-request-id": f"req_{next(self._ids)}"}
        if fault.retry_after is not None:
            headers["retry-after"] = fault.retry_after
        if fault.retry_after_ms is not None:
            headers["retry-after-ms"] = fault.retry_after_ms
        record.first_byte_at = record.last_byte_at = time.monotonic()
        return web.json_response(fault.body(), status=fault.status, headers=headers)

    async def _stream(
        self,
        request: web.Request,
        body: dict[str, Any],
        response: Reply | CutOff | Malformed | StreamError,
        record: RecordedRequest,
    ) -> web.StreamResponse:
        reply = response if isinstance(response, Reply) else response.reply
        chunks = [json.dumps(c) for c in self._chunks(body, reply)]
        if isinstance(response, Malformed):
            chunks[response.at_chunk] = chunks[response.at_chunk][
                : len(chunks[response.at_chunk]) // 2
            ]
        if isinstance(response, StreamError):
            error = {
                "message": response.message,
                "type": response.type,
                "param": None,
                "code": response.code,
            }
            chunks = [*chunks[: response.after_chunks], json.dumps({"error": error})]
        events = [f"data: {c}\n\n".encode() for c in chunks]
        if not isinstance(response, StreamError):
            events.append(b"data: [DONE]\n\n")
        stop_after = response.after_chunks if isinstance(response, CutOff) else len(events)

        out = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                "x-request-id": f"req_{next(self._ids)}",
            }
        )
        await out.prepare(request)
        reasoned = 1 + -(-len(reply.reasoning) // max(1, reply.text_chunk_chars))
        for sent, event in enumerate(events[:stop_after], 1):
            await out.write(event)
            if record.first_byte_at is None:
                record.first_byte_at = time.monotonic()
            if sent == reasoned and reply.reasoning and reply.hold_after_reasoning is not None:
                await reply.hold_after_reasoning.wait()
        record.last_byte_at = time.monotonic()
        if isinstance(response, CutOff) and response.hold_until is not None:
            await response.hold_until.wait()
        if isinstance(response, CutOff) and response.drop_connection:
            transport = request.transport
            assert transport is not None
            transport.close()
            return out
        await out.write_eof()
        return out

    async def _raw(
        self, request: web.Request, raw: Raw, record: RecordedRequest
    ) -> web.StreamResponse:
        out = web.StreamResponse(
            headers={
                "Content-Type": raw.content_type,
                "x-request-id": f"req_{next(self._ids)}",
            }
        )
        await out.prepare(request)
        record.first_byte_at = time.monotonic()
        if raw.body:
            await out.write(raw.body)
        record.last_byte_at = time.monotonic()
        if raw.drop_connection and request.transport is not None:
            request.transport.close()
            return out
        await out.write_eof()
        return out

    # --- payloads ---

    def _chunks(self, body: dict[str, Any], reply: Reply) -> list[dict[str, Any]]:
        chunk_id = f"chatcmpl-fake{next(self._ids)}"
        model = str(body.get("model", "fake"))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            out: dict[str, Any] = {
                "id": chunk_id,
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": model,
                "system_fingerprint": "fp_fake",
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
            }
            if include_usage:
                out["usage"] = None
            return out

        chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
        step = max(1, reply.text_chunk_chars)
        for start in range(0, len(reply.reasoning), step):
            chunks.append(chunk({reply.reasoning_field: reply.reasoning[start : start + step]}))
        for start in range(0, len(reply.text), step):
            chunks.append(chunk({"content": reply.text[start : start + step]}))
        for index, call in enumerate(reply.calls):
            chunks.extend(chunk({"tool_calls": [d]}) for d in self._call_deltas(index, call, reply))
        finish = reply.finish_reason or ("tool_calls" if reply.calls else "stop")
        chunks.append(chunk({}, finish))
        if include_usage:
            usage = chunk({})
            usage["choices"] = []
            usage["usage"] = self._usage(reply)
            chunks.append(usage)
        return chunks

    def _call_deltas(self, index: int, call: FakeCall, reply: Reply) -> list[dict[str, Any]]:
        args = call.arguments_text
        size = max(1, -(-len(args) // max(1, reply.argument_fragments)))
        parts = [args[i : i + size] for i in range(0, len(args), size)] or [""]
        first: dict[str, Any] = {
            "index": index,
            "id": call.id or f"call_{next(self._ids)}",
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        rest = [{"index": index, "function": {"arguments": p}} for p in parts]
        return [first, *rest]

    @staticmethod
    def _usage(reply: Reply) -> dict[str, Any]:
        return {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cached_tokens, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": len(reply.reasoning) // 4,
                "audio_tokens": 0,
            },
        }

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.calls:
            message["tool_calls"] = [
                {
                    "id": c.id or f"call_{next(self._ids)}",
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments_text},
                }
                for c in reply.calls
            ]
        return {
            "id": f"chatcmpl-fake{next(self._ids)}",
            "object": "chat.completion",
            "created": CREATED,
            "model": str(body.get("model", "fake")),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": reply.finish_reason
                    or ("tool_calls" if reply.calls else "stop"),
                }
            ],
            "usage": self._usage(reply),
        }
