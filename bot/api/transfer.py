"""What a surface offers to move files: its ``files`` attribute, when the platform has them.

Kept beside the :class:`~bot.api.surface.Surface` protocol rather than in it: a surface
without files (a test's recording surface) simply has none, and the core says so.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from bot.api.inbound import Attachment


@runtime_checkable
class FileTransfer(Protocol):
    async def fetch(self, file: Attachment, limit: int) -> bytes:
        """The file's bytes, with the platform's credentials. Raises
        :class:`~bot.errors.FileRefused` when it is larger than ``limit`` bytes or cannot be
        downloaded (the message says why)."""
        ...

    async def send(self, name: str, data: bytes) -> None:
        """Post ``data`` as a file named ``name`` in the thread; raises
        :class:`~bot.errors.SurfaceError` when the platform refuses."""
        ...


def file_transfer(surface: object) -> FileTransfer | None:
    """The surface's file transfer, if it has one."""
    files = getattr(surface, "files", None)
    return files if isinstance(files, FileTransfer) else None
