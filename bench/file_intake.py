"""How long the core takes to take in a message's files (once downloaded): sniffing, saving in
the thread's workspace, PDF text and previews. Prints p50/p95 per kind over repeated runs.

Run: ``python -m bench.file_intake``."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from bot.api.inbound import Attachment
from bot.config import Settings
from bot.files.intake import Intake
from tests.fakes.documents import CSV, PNG, text_pdf

RUNS = 200


class Memory:
    def __init__(self, data: bytes) -> None:
        self.data = data

    async def fetch(self, file: Attachment, limit: int) -> bytes:
        return self.data

    async def send(self, name: str, data: bytes) -> None:
        raise NotImplementedError


async def main() -> None:
    kinds = {
        "csv (200 KB)": CSV * 3500,
        "pdf (20 pages)": text_pdf(*(f"Page {n} of the quarterly report" for n in range(20))),
        "png image (1 MB)": PNG + bytes(1024 * 1024),
    }
    with tempfile.TemporaryDirectory() as root:
        intake = Intake(Settings(_env_file=None), Path(root))
        for label, data in kinds.items():
            times = []
            for n in range(RUNS):
                file = Attachment(f"f{n}", "memory://", len(data))
                start = time.perf_counter()
                await intake.take(f"bench:{label}:{n}", (file,), Memory(data), vision=True)
                times.append((time.perf_counter() - start) * 1000)
            times.sort()
            p95 = times[int(len(times) * 0.95)]
            print(f"{label:18} p50 {statistics.median(times):6.2f} ms   p95 {p95:6.2f} ms")


if __name__ == "__main__":
    asyncio.run(main())
