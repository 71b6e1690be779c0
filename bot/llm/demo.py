"""The offline demo model: an HTTP transport that plays a small scripted agent.

It answers ``POST …/chat/completions`` with a real Server-Sent Events stream of
``chat.completion.chunk`` objects (a usage chunk, then ``data: [DONE]``), so the demo goes
through the same client, parsing and error handling as a real model. Nothing leaves the process.

What it says is :mod:`bot.llm.demo_script`'s.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx2

from bot.llm.demo_script import DEMO_COMMAND, DemoReply, demo_reply

__all__ = [
    "DEMO_BASE_URL",
    "DEMO_COMMAND",
    "DEMO_LABEL",
    "DEMO_MODEL",
    "DemoTransport",
    "DemoReply",
    "demo_chunks",
    "demo_reply",
]

DEMO_MODEL = "threadline-demo"
DEMO_LABEL = "demo model (offline)"
DEMO_BASE_URL = "http://demo.invalid/v1"
DEFAULT_CHUNK_DELAY_S = 0.03
WORDS_PER_CHUNK = 3
CREATED = 1_700_000_000

_WORDS = re.compile(r"\S+\s*|\s+")


def _pieces(text: str) -> list[str]:
    words = _WORDS.findall(text)
    return ["".join(words[i : i + WORDS_PER_CHUNK]) for i in range(0, len(words), WORDS_PER_CHUNK)]


def demo_chunks(body: dict[str, Any], turn: DemoReply, prompt_chars: int) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of one streamed answer."""
    model = str(body.get("model") or DEMO_MODEL)

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-demo-{turn.call_id or 'final'}",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks.extend(chunk({"content": piece}) for piece in _pieces(turn.text))
    arguments = ""
    if (call := turn.tool_call) is not None:
        name, arguments = call
        first = {"index": 0, "id": turn.call_id, "type": "function"}
        chunks.append(
            chunk({"tool_calls": [{**first, "function": {"name": name, "arguments": ""}}]})
        )
        half = len(arguments) // 2
        for part in (arguments[:half], arguments[half:]):
            chunks.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}))
    chunks.append(chunk({}, "stop" if call is None else "tool_calls"))
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = chunk({})
        usage["choices"] = []
        completion = (len(turn.text) + len(arguments)) // 4 + 1
        usage["usage"] = {
            "prompt_tokens": prompt_chars // 4,
            "completion_tokens": completion,
            "total_tokens": prompt_chars // 4 + completion,
            "prompt_tokens_details": {"cached_tokens": 0},
        }
        chunks.append(usage)
    return chunks


class _EventStream(httpx2.AsyncByteStream):
    def __init__(self, events: Sequence[bytes], delay_s: float) -> None:
        self._events = events
        self._delay_s = delay_s

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for number, event in enumerate(self._events):
            if number and self._delay_s > 0:
                await asyncio.sleep(self._delay_s)
            yield event


class DemoTransport(httpx2.AsyncBaseTransport):
    """Serves the demo model over an in-process HTTP transport; no network."""

    def __init__(self, *, chunk_delay_s: float = DEFAULT_CHUNK_DELAY_S) -> None:
        self._delay_s = chunk_delay_s

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
            return _error(request, 404, f"The demo model has no {request.url.path} endpoint.")
        raw = await request.aread()
        try:
            body = json.loads(raw)
        except ValueError:
            return _error(request, 400, "The request body is not JSON.")
        if not isinstance(body, dict) or not body.get("stream"):
            return _error(request, 400, "The demo model answers streamed requests only.")
        chunks = demo_chunks(body, demo_reply(body), len(raw))
        events = [f"data: {json.dumps(c)}\n\n".encode() for c in chunks]
        events.append(b"data: [DONE]\n\n")
        return httpx2.Response(
            200,
            headers={"content-type": "text/event-stream; charset=utf-8"},
            stream=_EventStream(events, self._delay_s),
            request=request,
        )


def _error(request: httpx2.Request, status: int, message: str) -> httpx2.Response:
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    return httpx2.Response(status, json={"error": error}, request=request)
