"""Files and directories of the data dir, readable by the bot's own user only.

The data directory is created 0700 and the database file 0600; SQLite creates the database's
``-wal`` and ``-shm`` files with the database file's mode, so they are 0600 too.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> None:
    """Create ``path`` (and its parents) if missing; a directory created here is 0700."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)


def private_file(path: Path) -> None:
    """Create ``path`` 0600 if missing; an existing file open to others is narrowed to 0600
    (left as it is when it belongs to someone else)."""
    fd = os.open(path, os.O_RDONLY | os.O_CREAT, FILE_MODE)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
            with contextlib.suppress(PermissionError):
                os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
