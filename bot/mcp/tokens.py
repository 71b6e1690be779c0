"""What the bot keeps of its OAuth sign-ins to MCP servers: per server, one shared sign-in or
one per person, each a record sealed with the installation's key (:mod:`bot.infra.sealed`) in
``data_dir/mcp-sign-ins/SERVER/``.

A record is a JSON object read only by :mod:`bot.mcp.sdk.oauth`: the tokens, when the access
token expires, the client the bot registered, and what the authorization server said of
itself (its token and revocation endpoints). Nothing else reads the tokens: the state shown
to people (:func:`state_of`) is computed from the times alone.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from bot.infra.sealed import Sealer, Unreadable

Record = dict[str, Any]
SHARED = "shared"
"""The subject of a server's one shared sign-in."""
FOLDER = "mcp-sign-ins"


class Slot(Protocol):
    """Where one sign-in (one server, one person or everyone) is kept."""

    async def read(self) -> Record | None: ...

    async def write(self, record: Record) -> None: ...

    async def erase(self) -> None: ...


class MemorySlot:
    """A sign-in kept for the life of the process only (``threadline mcp try URL``)."""

    def __init__(self) -> None:
        self.record: Record | None = None

    async def read(self) -> Record | None:
        return self.record

    async def write(self, record: Record) -> None:
        self.record = dict(record)

    async def erase(self) -> None:
        self.record = None


class FileSlot:
    """One sealed file; written whole to a temporary file and renamed into place."""

    def __init__(self, path: Path, sealer: Sealer, subject: str) -> None:
        self.path = path
        self.subject = subject
        self._sealer = sealer

    async def read(self) -> Record | None:
        return await asyncio.to_thread(self._read)

    async def write(self, record: Record) -> None:
        await asyncio.to_thread(self._write, {**record, "subject": self.subject})

    async def erase(self) -> None:
        await asyncio.to_thread(self.path.unlink, missing_ok=True)

    def _read(self) -> Record | None:
        try:
            sealed = self.path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            found = json.loads(self._sealer.unseal(sealed))
        except (Unreadable, ValueError):
            return None  # another key (THREADLINE_SECRET_KEY changed): a new sign-in is needed
        return found if isinstance(found, dict) else None

    def _write(self, record: Record) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        part = self.path.with_suffix(".part")
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(self._sealer.seal(json.dumps(record).encode()))
        part.replace(self.path)


class Vault:
    """Every sign-in of this installation, under ``data_dir``."""

    def __init__(self, data_dir: Path, sealer: Sealer) -> None:
        self.root = data_dir / FOLDER
        self._sealer = sealer

    def slot(self, server: str, person: str | None = None) -> FileSlot:
        """The shared sign-in of ``server``, or ``person``'s."""
        subject = SHARED if person is None else f"person:{person}"
        name = hashlib.sha256(subject.encode()).hexdigest()[:32]
        return FileSlot(self.root / _folder(server) / f"{name}.sealed", self._sealer, subject)

    async def people(self, server: str) -> list[tuple[str, Record]]:
        """Each person's sign-in to ``server`` (their id, their record)."""

        def read() -> list[tuple[str, Record]]:
            folder = self.root / _folder(server)
            found = []
            for path in sorted(folder.glob("*.sealed")) if folder.is_dir() else []:
                record = FileSlot(path, self._sealer, "")._read()
                subject = record.get("subject", "") if record else ""
                if record and isinstance(subject, str) and subject.startswith("person:"):
                    found.append((subject.removeprefix("person:"), record))
            return found

        return await asyncio.to_thread(read)


def _folder(server: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in server)
    return f"{safe}-{hashlib.sha256(server.encode()).hexdigest()[:8]}"


def state_of(record: Record | None, now: float) -> str:
    """A sign-in's state in words (never the token): signed in, expired, or none."""
    if not record or not record.get("tokens"):
        return "needs sign-in"
    expires = record.get("expires_at")
    refreshable = bool(record.get("refreshable"))
    if isinstance(expires, int | float) and expires <= now:
        if refreshable:
            return "signed in (the access token expired; it is renewed on the next call)"
        return "expired: needs sign-in again"
    if isinstance(expires, int | float):
        until = datetime.fromtimestamp(expires, UTC).strftime("%Y-%m-%d %H:%M UTC")
        return f"signed in (until {until}{', renewed after' if refreshable else ''})"
    return "signed in"
