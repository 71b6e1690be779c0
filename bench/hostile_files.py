"""What hostile files cost: peak memory and time for each, every case in a fresh process.

- ``discord lying size``: an attachment that declares 100 bytes and streams 300 MB from the
  fake Discord's CDN, taken in through the core with the 20 MB cap (``--before``: read whole,
  as ``get_from_cdn`` did);
- ``discord silent``: a download that sends its headers and then nothing; the time until the
  thread's note, with ``file_download_seconds`` at 5;
- ``pdf 100k pages`` (15 MB) and ``pdf 2M operators`` (one page): the core's intake, the
  process's peak and the PDF reader's (``--before``: pypdf in the process, as before).

Run: ``python -m bench.hostile_files [--before]`` (about 20 s; 50 more with ``--before``).
"""

from __future__ import annotations

import asyncio
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import discord

from adapters.discord.endpoints import point_at
from adapters.discord.files import DiscordFileTransfer
from bot.api.inbound import Attachment
from bot.config import Settings
from bot.files.intake import Intake
from bot.infra.clock import SystemClock
from tests.fakes.discord import FakeDiscord
from tests.fakes.documents import dense_pdf, many_pages_pdf
from tests.fakes.faulty_body import Fault

MB = 1024 * 1024
CASES = ("discord lying size", "discord silent", "pdf 100k pages", "pdf 2M operators")
BEFORE = (
    "discord lying size, read whole",
    "pdf 100k pages, in process",
    "pdf 2M operators, in process",
)


class Memory:
    """A transfer that has the bytes already (the PDF cases measure the reading alone)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    async def fetch(self, file: Attachment, limit: int) -> bytes:
        return self.data

    async def send(self, name: str, data: bytes) -> None:
        raise NotImplementedError


def peak_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


async def discord_case(fault: Fault, whole: bool, settings: Settings) -> str:
    fake = FakeDiscord(SystemClock())
    await fake.start()
    try:
        point_at(fake.api_base, None)
        url = fake.cdn.attachment(1, "tiny.txt", b"x", "text/plain", size=100, fault=fault)["url"]
        file = Attachment("tiny.txt", url, 100, "text/plain")
        client = discord.Client(intents=discord.Intents.none())
        if whole:  # what discord.py's get_from_cdn does: the whole body, then the cap
            import aiohttp

            async with aiohttp.ClientSession() as session, session.get(url) as response:
                data = await response.read()
            return f"read {len(data) / MB:.0f} MB, then refused"
        transfer = DiscordFileTransfer(client, None, None)  # type: ignore[arg-type]
        with tempfile.TemporaryDirectory() as root:
            got = await Intake(settings, Path(root)).take(
                "bench:1", (file,), transfer, vision=False
            )
        return got.problems[0] if got.problems else "read"
    finally:
        await fake.close()


async def pdf_case(data: bytes, settings: Settings) -> str:
    with tempfile.TemporaryDirectory() as root:
        file = Attachment("doc.pdf", "memory://", len(data))
        got = await Intake(settings, Path(root)).take(
            "bench:1", (file,), Memory(data), vision=False
        )
    return got.problems[0] if got.problems else "read whole"


def pdf_in_process(data: bytes) -> str:
    import io

    import pypdf

    reader = pypdf.PdfReader(io.BytesIO(data))
    size = 0
    try:
        for page in reader.pages[:500]:
            size += len(page.extract_text() or "")
            if size > 1_000_000:
                break
    except pypdf.errors.PyPdfError as exc:
        return f"pypdf gave up: {exc}"
    return f"{len(reader.pages):,} pages, {size:,} characters"


async def one(case: str, data: bytes) -> str:
    settings = Settings(_env_file=None, file_download_seconds=5)
    if case.startswith("discord lying size"):
        fault = Fault(body_bytes=300 * MB)
        return await discord_case(fault, case.endswith("whole"), settings)
    if case == "discord silent":
        return await discord_case(Fault(silent=True, silent_s=30), False, settings)
    if case.endswith("in process"):
        return pdf_in_process(data)
    return await pdf_case(data, settings)


READER_PEAK = """
import resource, subprocess, sys
from bot.files.pdf import PdfLimits
limits = PdfLimits()
subprocess.run(
    [sys.executable, "-m", "bot.files.pdf_pages", str(limits.memory_bytes), str(limits.cpu_s),
     str(limits.pages), str(limits.page_bytes)],
    input=sys.stdin.buffer.read(), stdout=subprocess.DEVNULL, check=True,
)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
"""
"""The PDF reader's own peak, measured from a small process that starts it (a child forked from
this one would count this process's memory as its own until it execs)."""


def reader_peak(data: bytes) -> str:
    found = subprocess.run(
        [sys.executable, "-c", READER_PEAK], input=data, capture_output=True, check=True
    )
    return f"reader peak {int(found.stdout):4d} MB"


def child(case: str) -> None:
    pdf = case.startswith("pdf")
    data = (many_pages_pdf(100_000) if "100k" in case else dense_pdf(2_000_000)) if pdf else b""
    baseline = peak_mb()
    start = time.perf_counter()
    said = asyncio.run(one(case, data))
    took = time.perf_counter() - start
    reader = reader_peak(data) if pdf and not case.endswith("in process") else ""
    print(
        f"{case:32} {took:6.2f} s  peak {peak_mb():5.0f} MB (+{peak_mb() - baseline:4.0f})  "
        f"{reader:20} | {said[:80]}"
    )


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        child(sys.argv[2])
        return
    cases = CASES + (BEFORE if "--before" in sys.argv else ())
    for case in cases:
        subprocess.run([sys.executable, "-m", "bench.hostile_files", "--one", case], check=True)


if __name__ == "__main__":
    main()
