"""Secrets kept at rest, encrypted (Fernet: AES-128-CBC with an HMAC-SHA256, from
``cryptography``, whose only home this is).

The key is ``THREADLINE_SECRET_KEY`` (any long random text, stretched to a key with SHA-256)
when set, else a key made once and kept in ``data_dir/secret.key`` (readable by its owner
only). Whoever holds the key reads what was sealed with it: keep it out of backups of the
data directory, or set ``THREADLINE_SECRET_KEY`` from a secret store.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

KEY_FILE = "secret.key"


class Unreadable(Exception):
    """Sealed with another key, or damaged."""


class Sealer:
    """Seals with ``key``, or with the key ``key()`` gives the first time one is needed (so an
    installation that never seals anything makes no key file)."""

    def __init__(self, key: bytes | Callable[[], bytes]) -> None:
        self._key = key
        self._made: Fernet | None = None

    @property
    def _fernet(self) -> Fernet:
        if self._made is None:
            self._made = Fernet(self._key if isinstance(self._key, bytes) else self._key())
        return self._made

    def seal(self, data: bytes) -> bytes:
        return self._fernet.encrypt(data)

    def unseal(self, sealed: bytes) -> bytes:
        try:
            return self._fernet.decrypt(sealed)
        except InvalidToken:
            raise Unreadable("sealed with another key, or damaged") from None


def key_from(secret: str) -> bytes:
    """A Fernet key from ``THREADLINE_SECRET_KEY``'s text."""
    return base64.urlsafe_b64encode(hashlib.sha256(secret.encode()).digest())


def sealer(data_dir: Path, secret: str | None) -> Sealer:
    """The sealer of this installation: from ``secret`` when given, else from the key file in
    ``data_dir`` (made, readable by its owner only, the first time)."""
    if secret:
        return Sealer(key_from(secret))
    return Sealer(lambda: _key_file(data_dir / KEY_FILE))


def _key_file(path: Path) -> bytes:
    """The key kept in ``path``, made the first time (the data directory 0700, the file 0600)."""
    if not path.is_file():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first
            pass
        else:
            with os.fdopen(fd, "wb") as out:
                out.write(Fernet.generate_key())
    return path.read_bytes().strip()
