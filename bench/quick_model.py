"""An OpenAI-compatible model server that answers every chat completion at once, for benchmarks
that must not measure the fake: plain asyncio, HTTP/1.1 keep-alive, one fixed streamed answer
("Done."), about 50 µs of CPU per request. It reads each request's headers and body and answers
in order; it checks nothing else (``tests/fakes/openai_server.py`` is the fake that does).

    server = QuickModel.start()      # in a process of its own
    server.base_url                  # http://127.0.0.1:PORT/v1
    server.cpu_s()                   # its CPU seconds so far
    server.stop()
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
from pathlib import Path
from typing import Any

_CHUNK = {"id": "bench", "object": "chat.completion.chunk", "created": 0, "model": "bench"}
_EVENTS = [
    {
        **_CHUNK,
        "choices": [
            {"index": 0, "delta": {"role": "assistant", "content": "Done."}, "finish_reason": None}
        ],
    },
    {**_CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    {
        **_CHUNK,
        "choices": [],
        "usage": {"prompt_tokens": 20, "completion_tokens": 2, "total_tokens": 22},
    },
]
_BODY = (
    b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in _EVENTS) + b"data: [DONE]\n\n"
)
ANSWER = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: keep-alive\r\n"
    b"content-length: " + str(len(_BODY)).encode() + b"\r\n\r\n" + _BODY
)


class _Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self._buffer = b""
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while (end := self._buffer.find(b"\r\n\r\n")) >= 0:
            length = 0
            for line in self._buffer[:end].split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self._buffer) < end + 4 + length:
                return  # the body is still coming
            self._buffer = self._buffer[end + 4 + length :]
            assert self._transport is not None
            self._transport.write(ANSWER)


def _serve(port_out: Any, stop: Any) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(_Connection, "127.0.0.1", 0, backlog=1024)
        port_out.put(server.sockets[0].getsockname()[1])
        await loop.run_in_executor(None, stop.wait)
        server.close()

    asyncio.run(main())


class QuickModel:
    def __init__(self, process: Any, port: int, stop: Any) -> None:
        self._process = process
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self._stop = stop

    @classmethod
    def start(cls) -> QuickModel:
        ctx = multiprocessing.get_context("spawn")
        port_out, stop = ctx.Queue(), ctx.Event()
        process = ctx.Process(target=_serve, args=(port_out, stop), daemon=True)
        process.start()
        return cls(process, port_out.get(timeout=30), stop)

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self._process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self._stop.set()
        self._process.join(timeout=10)
        if self._process.is_alive():
            self._process.kill()
