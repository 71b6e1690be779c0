"""What the bot keeps of its OAuth sign-ins to MCP servers: per server, one shared sign-in or
one per person, each a record sealed with the installation's key (:mod:`bot.infra.sealed`) and
kept in the store (:class:`SignInKeep`), so workers sharing a database share the sign-ins.

A record is a JSON object read only by :mod:`bot.mcp.sdk.oauth`: the tokens, when the access
token expires, the client the bot registered, and what the authorization server said of
itself (its token and revocation endpoints). Nothing else reads the tokens: the state shown
to people (:func:`state_of`) is computed from the times alone.

Each write is a compare-and-set on the version its writer read. A write that finds the record
changed meanwhile (another worker renewed the token, or signed in anew) reads it again: the
fresher tokens of the two are kept (the later expiry; a tie goes to the last writer), with the
writer's other fields (the client, the server's metadata) over them. No renewal overwrites a
newer token.

Sign-ins made before they were kept in the store (sealed files in ``data_dir/mcp-sign-ins/``)
are moved into it once, on start (:meth:`Vault.adopt_files`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from bot.infra.sealed import Sealer, Unreadable

log = logging.getLogger(__name__)

Record = dict[str, Any]
SHARED = "shared"
"""The subject of a server's one shared sign-in."""
FOLDER = "mcp-sign-ins"
"""Where sign-ins were kept, as files, before the store kept them."""
TOKEN_FIELDS = ("tokens", "expires_at", "refreshable", "signed_in_at")
"""The fields of a record that come with its tokens (kept or replaced together)."""
ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class Kept:
    """A sealed sign-in as the store holds it, with the version each write raises."""

    sealed: bytes
    version: int


class SignInKeep(Protocol):
    """Where sealed sign-ins are kept (the store: SQLite, or PostgreSQL shared by workers)."""

    async def sign_in(self, server: str, subject: str) -> Kept | None: ...

    async def keep_sign_in(
        self, server: str, subject: str, sealed: bytes, version: int, now: float
    ) -> bool:
        """Keep ``sealed`` as the next version if the kept one is still ``version`` (0: none
        is kept yet); False, writing nothing, when another writer came first."""
        ...

    async def forget_sign_in(self, server: str, subject: str) -> None: ...

    async def sign_ins(self, server: str) -> list[tuple[str, bytes]]:
        """Every ``(subject, sealed)`` kept for ``server``."""
        ...


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


class KeptSlot:
    """One sign-in in the store; each write is a compare-and-set on the version last read."""

    def __init__(self, keep: SignInKeep, sealer: Sealer, server: str, subject: str) -> None:
        self.server = server
        self.subject = subject
        self._keep = keep
        self._sealer = sealer
        self._version: int | None = None
        self._foreign = False

    async def read(self) -> Record | None:
        kept = await self._keep.sign_in(self.server, self.subject)
        self._version = kept.version if kept is not None else 0
        found = opened(self._sealer, kept.sealed) if kept is not None else None
        self._foreign = kept is not None and found is None
        return found

    async def write(self, record: Record) -> None:
        mine = {**record, "subject": self.subject}
        for _ in range(ATTEMPTS):
            if self._version is None:
                await self.read()
            version = self._version or 0
            if self._foreign:  # another key sealed it: a worker without the shared key
                log.warning(
                    "[%s] the sign-in kept was sealed with another key: not overwritten"
                    " (give every worker the same THREADLINE_SECRET_KEY)",
                    self.server,
                )
                return
            sealed = self._sealer.seal(json.dumps(mine).encode())
            if await self._keep.keep_sign_in(
                self.server, self.subject, sealed, version, time.time()
            ):
                self._version = version + 1
                return
            theirs = await self.read()  # written meanwhile (another worker)
            if theirs is not None and fresher(theirs, mine):
                mine = {**mine, **{k: theirs.get(k) for k in TOKEN_FIELDS}}
                if mine == theirs:
                    return
                log.info(
                    "[%s] a newer sign-in was kept meanwhile: its tokens are kept", self.server
                )
        log.warning(
            "[%s] the sign-in changed under %d writes in a row: not kept", self.server, ATTEMPTS
        )

    async def erase(self) -> None:
        await self._keep.forget_sign_in(self.server, self.subject)
        self._version = 0
        self._foreign = False


def fresher(theirs: Record, mine: Record) -> bool:
    """Whether ``theirs`` holds newer tokens than ``mine`` (a tie: not; the last writer wins)."""

    def rank(record: Record) -> tuple[bool, float]:
        expires = record.get("expires_at")
        if not record.get("tokens"):
            return (False, 0.0)
        return (True, float(expires) if isinstance(expires, int | float) else float("inf"))

    return rank(theirs) > rank(mine)


def opened(sealer: Sealer, sealed: bytes) -> Record | None:
    """A sealed record, or None when another key sealed it (``THREADLINE_SECRET_KEY`` changed,
    or a worker has its own key file): a new sign-in is needed."""
    try:
        found = json.loads(sealer.unseal(sealed))
    except (Unreadable, ValueError):
        return None
    return found if isinstance(found, dict) else None


class Vault:
    """Every sign-in of this installation, in the store."""

    def __init__(self, keep: SignInKeep, sealer: Sealer) -> None:
        self._keep = keep
        self._sealer = sealer

    def slot(self, server: str, person: str | None = None) -> KeptSlot:
        """The shared sign-in of ``server``, or ``person``'s."""
        subject = SHARED if person is None else f"person:{person}"
        return KeptSlot(self._keep, self._sealer, server, subject)

    async def people(self, server: str) -> list[tuple[str, Record]]:
        """Each person's sign-in to ``server`` (their id, their record)."""
        found = []
        for subject, sealed in await self._keep.sign_ins(server):
            record = opened(self._sealer, sealed)
            if record is not None and subject.startswith("person:"):
                found.append((subject.removeprefix("person:"), record))
        return found

    async def adopt_files(self, data_dir: Path, servers: list[str]) -> int:
        """Move the sign-ins kept as files under ``data_dir`` (before the store kept them) into
        the store, for each of ``servers``; a sign-in the store holds already is kept. The files
        are deleted once moved. Returns how many were moved."""
        moved = 0
        for server in servers:
            folder = data_dir / FOLDER / file_folder(server)
            paths = await asyncio.to_thread(_sealed_files, folder)
            for path in paths:
                sealed = await asyncio.to_thread(path.read_bytes)
                record = opened(self._sealer, sealed)
                subject = record.get("subject") if record else None
                if isinstance(subject, str) and subject:
                    kept = await self._keep.keep_sign_in(server, subject, sealed, 0, time.time())
                    moved += kept
                await asyncio.to_thread(path.unlink, missing_ok=True)
        if moved:
            log.info("%d MCP sign-ins moved from %s into the store", moved, data_dir / FOLDER)
        return moved


def _sealed_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.sealed")) if folder.is_dir() else []


def file_folder(server: str) -> str:
    """The folder under :data:`FOLDER` where a server's sign-ins were kept as files."""
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
