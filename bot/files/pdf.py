"""A shared PDF read in a separate process, within bounds the PDF's author cannot move.

A PDF's cost is its author's choice: 100,000 pages, or one page of two million drawing
operators, each takes seconds of CPU and hundreds of megabytes. Each PDF is read by its own
process (:mod:`bot.files.pdf_pages`, run with a minimal environment: no secrets), which
limits its own address space (:attr:`PdfLimits.memory_bytes`) and CPU time; the bot reads at
most :attr:`PdfLimits.pages` pages, skips a page whose drawing instructions pass
:attr:`PdfLimits.page_bytes`, and stops the reader after :attr:`PdfLimits.seconds` (keeping
the pages read by then). What was read is said: "read pages 1–50 of 100,000".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

import bot
from bot.infra.text import valid_text

_ROOT = str(Path(bot.__file__).resolve().parent.parent)
_LINE_LIMIT = 4 * 1024 * 1024
"""The longest line the reader may write (one page's text)."""


@dataclass(frozen=True, slots=True)
class PdfLimits:
    pages: int = 50
    page_bytes: int = 2_000_000
    """A page with more decoded drawing instructions than this is skipped."""
    seconds: float = 20.0
    """Wall time for one PDF; the reader is stopped then."""
    cpu_s: int = 15
    memory_bytes: int = 768 * 1024 * 1024
    """The reader's address space."""
    chars: int = 1_000_000
    """Text kept at most; the reader is stopped once this much was read."""


@dataclass(slots=True)
class PdfRead:
    pages: int | None = None
    """How many pages the PDF declares (None: it does not say)."""
    text: list[str] = field(default_factory=list)
    """``--- page N ---`` and its words, for each page read."""
    read: int = 0
    """Pages looked at (read or skipped), from the first."""
    skipped: list[str] = field(default_factory=list)
    """``page 3 (why)`` for each page not read."""
    stopped: str | None = None
    """Why reading stopped before the last page asked for."""
    unreadable: str | None = None
    """Why the PDF cannot be read at all (``is an encrypted PDF…``)."""

    @property
    def whole(self) -> bool:
        """Every page was read."""
        return (
            self.stopped is None
            and not self.skipped
            and (self.pages is None or self.read >= self.pages)
        )

    def what_was_read(self) -> str:
        """``read pages 1–50 of 100,000``, why it stopped, the pages skipped."""
        of = f" of {self.pages:,}" if self.pages is not None else ""
        if self.read == 0:
            said = f"read no page{of}"
        elif self.read == 1:
            said = f"read page 1{of}"
        else:
            said = f"read pages 1–{self.read:,}{of}"
        if self.stopped is not None:
            said += f" ({self.stopped})"
        if self.skipped:
            said += "; skipped " + ", ".join(self.skipped)
        return said


async def read_pdf(data: bytes, limits: PdfLimits) -> PdfRead:
    """The text of ``data``'s first pages, read within ``limits``."""
    found = PdfRead()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.files.pdf_pages",
        str(limits.memory_bytes),
        str(limits.cpu_s),
        str(limits.pages),
        str(limits.page_bytes),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={"PYTHONPATH": _ROOT, "PATH": os.defpath, "LC_ALL": "C.UTF-8"},
        limit=_LINE_LIMIT,
    )
    try:
        async with asyncio.timeout(limits.seconds):
            await _feed(process, data)
            await _collect(process, found, limits)
    except TimeoutError:
        found.stopped = f"stopped after {limits.seconds:g} s"
    except ValueError:  # a line longer than the reader may write, or not JSON
        found.stopped = "a page's text was more than the bot reads"
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        code = await process.wait()
    if found.stopped is None and found.read < min(found.pages or 0, limits.pages):
        found.stopped = _why_it_ended(code, limits)
    elif found.stopped is None and found.read >= limits.pages != found.pages:
        found.stopped = f"the bot reads at most {limits.pages}"
    return found


async def _feed(process: asyncio.subprocess.Process, data: bytes) -> None:
    stdin = process.stdin
    assert stdin is not None
    with contextlib.suppress(ConnectionError):  # a reader that died early
        stdin.write(data)
        await stdin.drain()
        stdin.close()


async def _collect(process: asyncio.subprocess.Process, found: PdfRead, limits: PdfLimits) -> None:
    stdout = process.stdout
    assert stdout is not None
    size = 0
    while line := await stdout.readline():
        event = json.loads(line)
        if "unreadable" in event:
            found.unreadable = str(event["unreadable"])
        elif "stopped" in event:
            found.stopped = f"it needed more than {limits.memory_bytes // 2**20} MB"
        elif "pages" in event:
            pages = event["pages"]
            found.pages = pages if isinstance(pages, int) else None
        elif "page" in event:
            found.read = int(event["page"])
            if event.get("text") is None:
                found.skipped.append(f"page {found.read} ({event.get('why')})")
                continue
            found.text.append(f"--- page {found.read} ---\n{valid_text(str(event['text']))}")
            size += len(found.text[-1])
            if size >= limits.chars:
                found.stopped = f"its first {size:,} characters are read"
                return


def _why_it_ended(code: int, limits: PdfLimits) -> str:
    if code == -signal.SIGXCPU or code == -signal.SIGKILL:
        return f"stopped after {limits.cpu_s} s of CPU time"
    return f"the reader ended early (exit code {code})"
