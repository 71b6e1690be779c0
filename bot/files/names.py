"""File names from a chat platform, made safe to store in a workspace.

A shared file's name is the sharer's choice: ``../../etc/passwd``, a NUL, a 300-character
name, ``.bashrc``. What is stored is a single path component of letters, digits and ``._-``
(other characters become ``_``), not hidden, at most :data:`MAX_CHARS` long with its
extension kept, and never one already taken.
"""

from __future__ import annotations

import re
from collections.abc import Container

MAX_CHARS = 100
MAX_SUFFIX = 16
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DOTS = re.compile(r"\.{2,}")


def safe_name(raw: str, taken: Container[str] = ()) -> str:
    """A safe, free file name for ``raw`` (``taken``: names already in use, compared as is)."""
    base = raw.replace("\\", "/").rsplit("/", 1)[-1]
    base = _DOTS.sub(".", _UNSAFE.sub("_", base)).strip("._-") or "file"
    stem, dot, suffix = base.rpartition(".")
    if not dot or not stem or len(suffix) > MAX_SUFFIX:
        stem, suffix = base, ""
    stem = stem[: MAX_CHARS - len(suffix) - 6].rstrip("._-") or "file"
    name = f"{stem}.{suffix}" if suffix else stem
    number = 2
    while name in taken:
        name = f"{stem}-{number}.{suffix}" if suffix else f"{stem}-{number}"
        number += 1
    return name
