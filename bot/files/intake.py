"""The files of one message: downloaded through the surface, saved in the thread's workspace,
and worded for the model.

Text, code and CSV are saved as they came and previewed; a PDF is saved with its text beside it
(``name.pdf.txt``) and previewed; an image is shown to the model as an image where it sees
images, else described; anything else is saved and named. What could not be had (over the size
cap, a download the platform refused, an image scan with no text) is said both to the model and
to the people in the thread, and the rest of the message is answered as usual.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.api.inbound import Attachment
from bot.api.transfer import FileTransfer
from bot.config import Settings
from bot.errors import FileRefused, SurfaceError
from bot.files.kinds import Sniffed, data_url, preview, size_words, sniff
from bot.files.names import safe_name
from bot.files.pdf import PdfLimits, read_pdf
from bot.tools.base import ToolError
from bot.tools.sandbox import Workspace

MAX_FILES = 10
"""Files read from one message; the rest are named as not read."""
PDF_READERS = 2
"""PDFs read at once (each in its own process)."""
_VISION_MODELS = re.compile(
    r"gpt-4o|gpt-4\.1|gpt-4-turbo|gpt-4-vision|gpt-5|\bo[134]\b|o[34]-mini|vision|claude|gemini|"
    r"llava|pixtral|qwen[\d.]*-?vl|gemma-?3|minicpm-v|moondream|grok-[2-9]",
    re.IGNORECASE,
)


def sees_images(vision: str, model: str, *, demo: bool = False) -> bool:
    """``THREADLINE_VISION``: ``on``/``off`` as set; ``auto`` by the model's name (the demo
    model sees no images)."""
    if vision != "auto":
        return vision == "on"
    return not demo and _VISION_MODELS.search(model) is not None


@dataclass(frozen=True, slots=True)
class Received:
    note: str
    """What the model reads after the message's text ("" without files)."""
    images: tuple[str, ...] = ()
    """``data:`` URLs of the images the model is shown."""
    problems: tuple[str, ...] = ()
    """What could not be read, in words for the thread."""


@dataclass(frozen=True, slots=True)
class _One:
    line: str
    image: str | None = None
    problem: str | None = None


class Intake:
    def __init__(self, settings: Settings, root: Path, pdf: PdfLimits | None = None) -> None:
        self._settings = settings
        self._root = root
        self._pdf_limits = pdf or PdfLimits()
        self._pdf_readers = asyncio.Semaphore(PDF_READERS)

    async def take(
        self, key: str, files: Sequence[Attachment], transfer: FileTransfer | None, *, vision: bool
    ) -> Received:
        if not files:
            return Received("")
        ws = await asyncio.to_thread(Workspace.for_thread, self._root, key)
        taken = set(await asyncio.to_thread(os.listdir, ws.root))
        done = [await self._one(ws, taken, f, transfer, vision) for f in files[:MAX_FILES]]
        for extra in files[MAX_FILES:]:
            name = safe_name(extra.name)
            done.append(
                _One(
                    f"- {name}: not read (only {MAX_FILES} files of a message are)",
                    problem=f"{name}: not read, only {MAX_FILES} files of a message are",
                )
            )
        count = len(files)
        head = f"Shared {count} file{'s' if count != 1 else ''} (saved in your workspace: use read_file):"
        note = "\n".join([head, *(d.line for d in done)])
        images = tuple(d.image for d in done if d.image is not None)
        return Received(note, images, tuple(d.problem for d in done if d.problem is not None))

    async def _one(
        self,
        ws: Workspace,
        taken: set[str],
        file: Attachment,
        transfer: FileTransfer | None,
        vision: bool,
    ) -> _One:
        shown = safe_name(file.name)
        cap = self._settings.file_max_bytes
        if file.size is not None and file.size > cap:
            why = f"{size_words(file.size)}, larger than the {size_words(cap)} cap"
            return _One(f"- {shown}: not downloaded ({why})", problem=f"{shown}: not read ({why})")
        if transfer is None:
            return _One(
                f"- {shown}: not downloaded (files cannot be read here)",
                problem=f"{shown}: not read (files cannot be downloaded here)",
            )
        limit_s = self._settings.file_download_seconds
        try:
            async with asyncio.timeout(limit_s):
                data = await transfer.fetch(file, cap)
        except TimeoutError:
            why = f"the download did not finish within {limit_s:g} s and was stopped"
            return _One(f"- {shown}: not downloaded ({why})", problem=f"{shown}: not read ({why})")
        except FileRefused as exc:
            return _One(f"- {shown}: not downloaded ({exc})", problem=f"{shown}: not read ({exc})")
        except SurfaceError as exc:
            why = f"the download failed: {exc}"
            return _One(f"- {shown}: not downloaded ({why})", problem=f"{shown}: not read ({why})")
        return await self._read(ws, taken, shown, data, vision)

    async def returned(
        self, key: str, name: str, data: bytes, *, vision: bool
    ) -> tuple[str, str | None]:
        """Keep a file a tool returned in the thread's workspace, as a shared file is kept:
        where it is kept, what it is and its start, and an image's data URL for the model to
        see (when it sees images). A file over the cap is not kept."""
        cap = self._settings.file_max_bytes
        if len(data) > cap:
            return (
                f"not kept ({size_words(len(data))}, larger than the {size_words(cap)} cap)",
                None,
            )
        ws = await asyncio.to_thread(Workspace.for_thread, self._root, key)
        taken = set(await asyncio.to_thread(os.listdir, ws.root))
        done = await self._read(ws, taken, name, data, vision)
        return "kept in your workspace as " + done.line.removeprefix("- "), done.image

    async def _read(
        self, ws: Workspace, taken: set[str], shown: str, data: bytes, vision: bool
    ) -> _One:
        kind = await asyncio.to_thread(sniff, data)
        name = await _keep(ws, taken, shown, data)
        about = f"- {name} ({size_words(len(data))}"
        match kind.kind:
            case "text":
                return self._text(about, kind)
            case "pdf":
                return await self._pdf(ws, taken, about, name, data)
            case "image":
                return self._image(about, name, kind, data, vision)
            case _:
                return _One(f"{about}, binary): saved, not shown")

    def _text(self, about: str, kind: Sniffed) -> _One:
        text = kind.text or ""
        lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        start = preview(text, self._settings.file_preview_chars)
        return _One(f"{about}, text, {lines:,} lines). Start:\n```\n{start}\n```")

    async def _pdf(
        self, ws: Workspace, taken: set[str], about: str, name: str, data: bytes
    ) -> _One:
        async with self._pdf_readers:
            read = await read_pdf(data, self._pdf_limits)
        if read.unreadable is not None:
            return _One(
                f"{about}, PDF): saved; its text cannot be read: it {read.unreadable}",
                problem=f"{name}: saved, but its text cannot be read: it {read.unreadable}",
            )
        text = "\n\n".join(read.text)
        said = None if read.whole else read.what_was_read()
        if not re.sub(r"--- page \d+ ---", "", text).strip():
            why = "it has no text layer (an image scan?)" if said is None else f"no text: {said}"
            return _One(
                f"{about}, PDF): saved; {why}, so its words cannot be read",
                problem=f"{name}: saved, but {why}, so I cannot read its words",
            )
        text_name = await _keep(ws, taken, f"{name}.txt", text.encode())
        start = preview(text, self._settings.file_preview_chars)
        where = f"its text is in {text_name}" + ("" if said is None else f" ({said})")
        line = f"{about}, PDF): {where}. Start:\n```\n{start}\n```"
        return _One(line, problem=None if said is None else f"{name}: {said}")

    def _image(self, about: str, name: str, kind: Sniffed, data: bytes, vision: bool) -> _One:
        if not vision:
            why = "this model cannot see images"
            return _One(
                f"{about}, image): saved; {why}, it is only described as attached",
                problem=f"{name}: attached, but {why}",
            )
        if len(data) > self._settings.image_max_bytes:
            why = f"larger than the {size_words(self._settings.image_max_bytes)} shown to the model"
            return _One(
                f"{about}, image): saved; {why}", problem=f"{name}: saved but not looked at ({why})"
            )
        return _One(
            f"{about}, image): shown to you with this message", image=data_url(data, kind.mimetype)
        )


async def _keep(ws: Workspace, taken: set[str], wanted: str, data: bytes) -> str:
    """Save ``data`` as ``wanted`` (numbered when taken); the same bytes already there under
    that name (a redelivery, a file shared twice) are not saved a second time."""
    if wanted in taken and await asyncio.to_thread(_holds, ws, wanted, data):
        return wanted
    name = safe_name(wanted, taken)
    taken.add(name)
    await asyncio.to_thread(_save, ws, name, data)
    return name


def _save(ws: Workspace, name: str, data: bytes) -> None:
    target = ws.resolve_for_write(name)
    fd = ws.open_file(name, target, write=True)
    with os.fdopen(fd, "wb") as out:
        out.truncate(0)
        out.write(data)


def _holds(ws: Workspace, name: str, data: bytes) -> bool:
    """Whether the workspace file ``name`` holds exactly ``data``."""
    try:
        fd = ws.open_file(name, ws.resolve(name))
    except ToolError:
        return False
    with os.fdopen(fd, "rb") as found:
        return found.read(len(data) + 1) == data
