"""A message with files, as the page sends it: a ``multipart/form-data`` body with the message's
fields (``thread_id``, ``text``, ``event_id``, ``user_name``) and one ``file`` part per file.

Each file is streamed to a staging directory (never held whole in memory); one over the cap is
read to its end and counted but not kept, so the thread can say how large it was. A body that
is not a readable form, an unknown field, a file without a name or with no bytes is refused
with a 4xx and nothing of it is kept.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import BodyPartReader, web
from aiohttp.http_exceptions import HttpProcessingError

from adapters.playground.files import FileStore, mimetype_of
from adapters.playground.state import FileData, new_id
from bot.api.kit import MAX_FILES, safe_name, size_words

FIELDS = frozenset({"thread_id", "text", "event_id", "user_name"})
FIELD_CHARS = 200_000
MAX_PARTS = 2 * MAX_FILES
"""Files one message may carry (the core reads the first ``MAX_FILES`` and names the rest)."""
CHUNK = 1024 * 1024


class UploadError(ValueError):
    """The upload is refused; ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Staged:
    name: str
    """Made safe already."""
    size: int
    mimetype: str
    path: Path | None
    """None for a file over the cap (its bytes were not kept)."""


@dataclass(slots=True)
class Upload:
    fields: dict[str, str] = field(default_factory=dict)
    files: list[Staged] = field(default_factory=list)


async def read_upload(request: web.Request, staging: Path, cap: int) -> Upload:
    """The form's fields and its files (staged in ``staging``); raises :class:`UploadError`.
    The whole body is bounded: files over the cap are counted only up to ``body_limit``."""
    limit = body_limit(cap)
    upload = Upload()
    seen = 0
    try:
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                raise UploadError(400, "a nested multipart body is not a message")
            if part.name == "file":
                if len(upload.files) >= MAX_PARTS:
                    raise UploadError(400, f"a message carries at most {MAX_PARTS} files")
                staged = await _file(part, staging / str(len(upload.files)), cap, limit - seen)
                seen += staged.size
                upload.files.append(staged)
            elif part.name in FIELDS and part.name not in upload.fields:
                upload.fields[part.name] = await _field(part)
            else:
                raise UploadError(400, f"unexpected form field {part.name!r}")
    except UploadError:
        raise
    except (ValueError, AssertionError, RuntimeError, HttpProcessingError) as exc:
        why = exc.message if isinstance(exc, HttpProcessingError) else str(exc)  # aiohttp's words
        raise UploadError(400, f"the multipart body cannot be read: {why}") from None
    return upload


async def keep(store: FileStore, thread_id: str, staged: Staged) -> FileData:
    """The staged file moved into the thread's files (one over the cap is only named)."""
    if staged.path is None:
        return FileData(
            id=new_id(), name=staged.name, size=staged.size, mimetype=staged.mimetype, kept=False
        )
    file_id = await asyncio.to_thread(store.keep, thread_id, staged.path)
    return FileData(id=file_id, name=staged.name, size=staged.size, mimetype=staged.mimetype)


def body_limit(cap: int) -> int:
    """The most bytes of files one message's body may hold (over-cap files included)."""
    return max(4 * cap, 64 * 1024 * 1024)


async def _field(part: BodyPartReader) -> str:
    data = bytearray()
    while chunk := await part.read_chunk(CHUNK):
        data += chunk
        if len(data) > FIELD_CHARS * 4:
            raise UploadError(413, f"the field {part.name!r} is too long")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UploadError(400, f"the field {part.name!r} is not UTF-8 text") from None


async def _file(part: BodyPartReader, target: Path, cap: int, room: int) -> Staged:
    raw = part.filename
    if not raw or not raw.strip():
        raise UploadError(400, "a file part has no file name")
    name = safe_name(raw)
    size = 0
    head = b""
    out = await asyncio.to_thread(target.open, "wb")
    try:
        while chunk := await part.read_chunk(CHUNK):
            size += len(chunk)
            if size > room:
                raise UploadError(
                    413, f"the files are larger than {size_words(body_limit(cap))} in all"
                )
            if not head:
                head = chunk[:64]
            if size <= cap:
                await asyncio.to_thread(out.write, chunk)
    finally:
        await asyncio.to_thread(out.close)
    if size == 0:
        raise UploadError(400, f"{name} is empty: there is nothing to share")
    if size > cap:
        await asyncio.to_thread(os.unlink, target)
        return Staged(name, size, mimetype_of(name, head), None)
    return Staged(name, size, mimetype_of(name, head), target)
