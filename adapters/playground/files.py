"""The playground's files: their bytes on disk, the thread's file transfer, and the download.

A file's bytes live in ``playground_files/<thread id>/<file id>`` under the data directory (ids
only: the name a person gave never becomes a path); what the page shows of it (name, size, type)
is a :class:`FileData` of its message in ``playground.json``. A download is served only for a
file shown in that thread, as an attachment in a sandbox (an HTML or SVG file never runs in the
page's origin).
"""

from __future__ import annotations

import asyncio
import contextlib
import mimetypes
import os
import re
import shutil
import tempfile
from pathlib import Path

from aiohttp import web

from adapters.playground.door import refusal
from adapters.playground.state import (
    BOT_ID,
    BOT_NAME,
    FileData,
    PlaygroundState,
    UnknownThread,
    new_id,
)
from bot.api.inbound import Attachment
from bot.api.kit import safe_name, size_words, sniff
from bot.errors import FileRefused, SurfaceError

URL_PREFIX = "playground-file:"
"""An :class:`Attachment`'s ``url`` in the playground: this prefix and the file's id."""
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def mimetype_of(name: str, head: bytes) -> str:
    """The file's type by its name, else by its first bytes."""
    guessed, _ = mimetypes.guess_type(name, strict=False)
    return guessed or sniff(head).mimetype


def attachment(file: FileData) -> Attachment:
    return Attachment(file.name, URL_PREFIX + file.id, file.size, file.mimetype)


class FileStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def staging(self) -> Path:
        """A fresh directory for an upload's files until its message is accepted."""
        base = self.root / ".staging"
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(dir=base))

    def clear_staging(self) -> None:
        shutil.rmtree(self.root / ".staging", ignore_errors=True)

    def keep(self, thread_id: str, staged: Path) -> str:
        """Move a staged file into the thread's files; returns its id."""
        file_id = new_id()
        os.replace(staged, self._folder(thread_id, make=True) / file_id)
        return file_id

    def write(self, thread_id: str, data: bytes) -> str:
        """Save ``data`` as a new file of the thread; returns its id."""
        folder = self._folder(thread_id, make=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            return self.keep(thread_id, Path(tmp))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def path(self, thread_id: str, file_id: str) -> Path:
        if not _ID.match(file_id):
            raise FileNotFoundError(file_id)
        return self._folder(thread_id) / file_id

    def read(self, thread_id: str, file_id: str, limit: int) -> bytes:
        """The file's bytes; raises :class:`FileRefused` when it is gone or over ``limit``."""
        try:
            with self.path(thread_id, file_id).open("rb") as found:
                data = found.read(limit + 1)
        except FileNotFoundError:
            raise FileRefused("the playground no longer has it") from None
        if len(data) > limit:
            raise FileRefused(f"larger than the {size_words(limit)} cap")
        return data

    @staticmethod
    def discard(staging: Path) -> None:
        shutil.rmtree(staging, ignore_errors=True)

    def _folder(self, thread_id: str, *, make: bool = False) -> Path:
        if not _ID.match(thread_id):
            raise FileNotFoundError(thread_id)
        folder = self.root / thread_id
        if make:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return folder


class PlaygroundFiles:
    """The :class:`~bot.api.transfer.FileTransfer` of one playground thread."""

    def __init__(self, state: PlaygroundState, store: FileStore, thread_id: str) -> None:
        self._state = state
        self._store = store
        self._thread_id = thread_id

    async def fetch(self, file: Attachment, limit: int) -> bytes:
        file_id = file.url.removeprefix(URL_PREFIX)
        try:
            shown = self._state.file(self._thread_id, file_id)
        except UnknownThread:
            shown = None
        if not file.url.startswith(URL_PREFIX) or shown is None or not shown.kept:
            raise FileRefused("it is not a file of this thread")
        return await asyncio.to_thread(self._store.read, self._thread_id, file_id, limit)

    async def send(self, name: str, data: bytes) -> None:
        shown = safe_name(name)
        try:
            self._state.thread(self._thread_id)
            file_id = await asyncio.to_thread(self._store.write, self._thread_id, data)
        except (UnknownThread, OSError) as exc:
            raise SurfaceError(f"the playground could not keep {shown}: {exc}") from exc
        file = FileData(
            id=file_id, name=shown, size=len(data), mimetype=mimetype_of(shown, data[:64])
        )
        self._state.post(
            self._thread_id, author_id=BOT_ID, author_name=BOT_NAME, text="", files=[file], bot=True
        )
        await self._state.flush()  # a posted file is kept, as a platform keeps it


async def serve(state: PlaygroundState, store: FileStore, request: web.Request) -> web.FileResponse:
    """``GET /api/files/{thread_id}/{file_id}``: a file shown in that thread, as a download."""
    thread_id, file_id = request.match_info["thread_id"], request.match_info["file_id"]
    try:
        file = state.file(thread_id, file_id)
    except UnknownThread:
        file = None
    if file is None or not file.kept:
        raise refusal(web.HTTPNotFound, "no such file in this thread")
    try:
        path = store.path(thread_id, file_id)
        if not await asyncio.to_thread(path.is_file):
            raise FileNotFoundError(file_id)
    except FileNotFoundError:
        raise refusal(web.HTTPNotFound, "the playground no longer has this file") from None
    return web.FileResponse(path, headers=download_headers(file))


def download_headers(file: FileData) -> dict[str, str]:
    """Headers that make a browser save the file, never show it in the page's origin."""
    mimetype = file.mimetype if "/" in file.mimetype else "application/octet-stream"
    if mimetype.startswith("text/") or mimetype in ("application/json", "application/xml"):
        mimetype += "; charset=utf-8"
    return {
        "Content-Type": mimetype,
        "Content-Disposition": f'attachment; filename="{safe_name(file.name)}"',
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "sandbox; default-src 'none'",
        "Cache-Control": "private, no-cache",
    }
