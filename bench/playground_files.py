"""How long the playground takes to take a message's file (the multipart upload streamed to
disk, kept in the thread, read into the workspace with its preview: the time to the 202) and to
serve a file back as a download, through its HTTP API on the real core with a scripted model.
Prints p50/p95 per size.

Run: ``python -m bench.playground_files``."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp

from tests.adapters.playground.conftest import Playground, open_playground
from tests.fakes.documents import CSV

RUNS = 30


def quantiles(times: list[float]) -> str:
    times.sort()
    return f"p50 {statistics.median(times):7.2f} ms   p95 {times[int(len(times) * 0.95)]:7.2f} ms"


async def upload(p: Playground, name: str, data: bytes, n: int) -> tuple[float, str, str]:
    form = aiohttp.FormData()
    form.add_field("text", "what is in it?")
    form.add_field("event_id", f"bench-{len(data)}-{n:04d}")
    form.add_field("file", data, filename=name, content_type="application/octet-stream")
    start = time.perf_counter()
    response = await p.client.post("/api/messages", data=form)
    took = (time.perf_counter() - start) * 1000
    assert response.status == 202, await response.text()
    posted = await response.json()
    await p.idle()
    message = (await p.thread(posted["thread_id"]))["messages"][0]
    return took, posted["thread_id"], message["files"][0]["id"]


async def main() -> None:
    sizes = {
        "csv (100 KB)": CSV * 1750,
        "csv (2 MB)": CSV * 35_000,
        "binary (15 MB)": bytes(15 << 20),
    }
    with tempfile.TemporaryDirectory() as root:
        async with open_playground(Path(root)) as p:
            for label, data in sizes.items():
                ups, downs = [], []
                for n in range(RUNS):
                    took, thread_id, file_id = await upload(p, "data.csv", data, n)
                    ups.append(took)
                    start = time.perf_counter()
                    response = await p.client.get(f"/api/files/{thread_id}/{file_id}")
                    assert len(await response.read()) == len(data)
                    downs.append((time.perf_counter() - start) * 1000)
                print(f"{label:15} upload to 202 {quantiles(ups)}   download {quantiles(downs)}")


if __name__ == "__main__":
    asyncio.run(main())
