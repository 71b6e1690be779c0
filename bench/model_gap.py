"""What the model layer adds between the engine and the model server.

The real :class:`OpenAIModel` (real ``openai`` client, loopback HTTP) against the fake OpenAI
server, with a 200-message history of about 78 KB: each call is that history plus the two
messages of the latest tool round (as in a tool loop), and the answer is ~40 text chunks and
a tool call in fragments.

Prints, per call:

* request overhead: from calling ``stream()`` to the fake server having read the whole request
  (serialisation, the client's request building, the loopback round trip), and the part of it
  spent building the JSON body;
* per-chunk cost: from the server's first byte to our last piece, divided by the chunks sent
  (client SSE parsing + piece mapping, and the fake server's writing);
* for comparison, the request overhead of ``chat.completions.create`` with the same history
  (the client transforms every message on each call).

    python bench/model_gap.py [--calls 300] [--baseline-calls 40]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import openai

from bot.infra.clock import SystemClock
from bot.llm.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResult,
    UserMessage,
)
from bot.llm.model import ModelRequest, TextPiece, ToolSpec
from bot.llm.openai_model import OpenAIModel
from bot.llm.retry import Backoff
from bot.llm.wire import WireEncoder, to_wire, tool_to_wire
from tests.fakes.openai_server import FakeCall, FakeOpenAI, Reply

SYSTEM = "You are Threadline, an assistant that works inside a team chat thread. " * 8
TOOLS = (
    ToolSpec(
        "todo_write",
        "Replace the thread's whole todo list.",
        {
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"content": {"type": "string"}, "status": {"type": "string"}},
                    },
                }
            },
            "required": ["todos"],
        },
    ),
)
FILLER = "The release pipeline builds, tests and signs each artefact before it ships. "


def history(size: int) -> list[Message]:
    """``size`` messages of a tool-using thread, about 390 bytes each on the wire."""
    out: list[Message] = []
    n = 0
    while len(out) < size:
        out.append(
            UserMessage(text=f"Question {n}: " + FILLER * 6, author_id="U1", author_name="Alice")
        )
        call = ToolCall(
            id=f"call_ours_{n}",
            wire_id=f"call_wire_{n}",
            name="todo_write",
            arguments='{"todos":[{"content":"Check the pipeline","status":"in_progress"}]}',
        )
        out.append(AssistantMessage(text="Let me check. " + FILLER, tool_calls=(call,)))
        out.append(ToolResult(call_id=call.id, name="todo_write", content="saved. " + FILLER * 3))
        out.append(AssistantMessage(text=f"Answer {n}: " + FILLER * 4))
        n += 1
    return out[:size]


def tool_round(n: int) -> list[Message]:
    call = ToolCall(id=f"call_new_{n}", wire_id=f"call_new_{n}", name="todo_write", arguments="{}")
    return [
        AssistantMessage(text="Working on it.", tool_calls=(call,)),
        ToolResult(call_id=call.id, name="todo_write", content="Todo list saved."),
    ]


def answer(body: dict[str, object]) -> Reply:
    del body
    return Reply(
        "Here is what I found in the pipeline logs: " + "the build passed and " * 10,
        calls=[
            FakeCall("todo_write", {"todos": [{"content": "Report back", "status": "completed"}]})
        ],
        text_chunk_chars=6,
    )


def quantiles(values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    cut = statistics.quantiles(ms, n=100, method="inclusive")
    return f"p50 {cut[49]:7.3f} ms   p90 {cut[89]:7.3f} ms   p99 {cut[98]:7.3f} ms   (n={len(ms)})"


def body_build(base: list[Message], calls: int) -> list[float]:
    """Our share of the request overhead: building the JSON body (warm caches)."""
    encoder = WireEncoder()
    times: list[float] = []
    for i in range(calls + 10):
        request = ModelRequest(SYSTEM, [*base, *tool_round(i)], TOOLS)
        started = time.perf_counter()
        encoder.body("gpt-4o-mini", request)
        if i >= 10:
            times.append(time.perf_counter() - started)
    return times


async def ours(
    fake: FakeOpenAI, base: list[Message], calls: int
) -> tuple[list[float], list[float], float]:
    model = OpenAIModel(
        "gpt-4o-mini",
        api_key="sk-bench",
        base_url=fake.base_url,
        clock=SystemClock(),
        backoff=Backoff(max_retries=0, rng=random.Random(0)),
    )
    overhead: list[float] = []
    per_chunk: list[float] = []
    cold = 0.0
    try:
        for i in range(calls + 10):
            request = ModelRequest(SYSTEM, [*base, *tool_round(i)], TOOLS)
            seen = len(fake.requests)
            started = time.monotonic()
            pieces = 0
            async for piece in model.stream(request):
                pieces += isinstance(piece, TextPiece)
            done = time.monotonic()
            record = fake.requests[seen]
            assert pieces > 0 and record.first_byte_at is not None
            chunks = _events(record.body)
            if i == 0:
                cold = record.received_at - started
            if i >= 10:  # warm-up: connection set up, caches filled
                overhead.append(record.received_at - started)
                per_chunk.append((done - record.first_byte_at) / chunks)
    finally:
        await model.aclose()
    return overhead, per_chunk, cold


def _events(body: dict[str, object]) -> int:
    reply = answer(body)
    text_chunks = -(-len(reply.text) // reply.text_chunk_chars)
    call_chunks = (1 + reply.argument_fragments) * len(reply.calls)
    return 1 + text_chunks + call_chunks + 1 + 1 + 1  # role, text, calls, finish, usage, [DONE]


async def baseline(fake: FakeOpenAI, base: list[Message], calls: int) -> list[float]:
    client = openai.AsyncOpenAI(api_key="sk-bench", base_url=fake.base_url, max_retries=0)
    tools: list[Any] = [tool_to_wire(t) for t in TOOLS]
    overhead: list[float] = []
    try:
        for i in range(calls + 5):
            messages: list[Any] = to_wire(SYSTEM, [*base, *tool_round(i)])
            seen = len(fake.requests)
            started = time.monotonic()
            stream = await client.chat.completions.create(
                model="gpt-4o-mini",
                messages=messages,
                tools=tools,
                stream=True,
                stream_options={"include_usage": True},
            )
            async for _ in stream:
                pass
            if i >= 5:
                overhead.append(fake.requests[seen].received_at - started)
    finally:
        await client.close()
    return overhead


async def main(calls: int, baseline_calls: int) -> None:
    base = history(200)
    async with FakeOpenAI(default=answer) as fake:
        overhead, per_chunk, cold = await ours(fake, base, calls)
        size = fake.requests[-1].raw_size
        print(f"history: 200 messages + 2 new per call, request body {size / 1024:.1f} KiB")
        print(f"first call (cold cache, new connection): {cold * 1000:.3f} ms to the server")
        print(f"request overhead   {quantiles(overhead)}")
        print(f"  of which body    {quantiles(body_build(base, calls))}")
        print(f"per-chunk cost     {quantiles(per_chunk)}")
        if baseline_calls:
            slow = await baseline(fake, base, baseline_calls)
            print(f"baseline create()  {quantiles(slow)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--baseline-calls", type=int, default=40)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.baseline_calls))
