"""A thread's workspace directory: safe path resolution and safe file access.

Every path a model gives is resolved inside the workspace, following symlinks, and refused
when it leaves it. A file the tools open is checked again through its descriptor: a regular
file with one link only (a hard link could name a file outside), on the workspace's own device,
whose real path is inside the workspace (:func:`check_descriptor`, which the skills' files
pass too).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bot.tools.base import ToolError

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def directory_name(thread_key: str) -> str:
    """A readable, filesystem-safe and collision-free directory name for a thread key."""
    digest = hashlib.sha256(thread_key.encode()).hexdigest()[:12]
    readable = _UNSAFE.sub("_", thread_key).strip("._-")[:80]
    return f"{readable}-{digest}" if readable else digest


@dataclass(frozen=True, slots=True)
class Workspace:
    """One thread's directory; ``root`` is absolute and has no symlinks.

    ``owner`` (uid, gid) is who owns the directory and what the tools create in it, when that is
    not the bot's own user (the sandbox's user when the bot runs as root).
    """

    root: Path
    device: int
    owner: tuple[int, int] | None = None

    @classmethod
    def for_thread(
        cls, base: Path, thread_key: str, owner: tuple[int, int] | None = None
    ) -> Workspace:
        """The thread's workspace under ``base``, created on first use."""
        directory = base / directory_name(thread_key)
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        root = directory.resolve(strict=True)
        info = root.stat()
        if owner is not None and (info.st_uid, info.st_gid) != owner:
            os.chown(root, *owner, follow_symlinks=False)
        return cls(root, info.st_dev, owner)

    def resolve(self, path: str) -> Path:
        """The real path of ``path`` (which need not exist), refused if it leaves the workspace."""
        pure = self._pure(path)
        return self._inside(path, self.root / pure)

    def resolve_for_write(self, path: str) -> Path:
        """Where writing ``path`` lands: inside the workspace, a file name, not a symlink."""
        pure = self._pure(path)
        self._inside(path, self.root / pure)
        if pure.name in ("", ".", ".."):
            raise ToolError(f"{path!r} does not name a file")
        parent = self._inside(path, self.root / pure.parent)
        target = parent / pure.name
        if target.is_symlink():
            raise ToolError(f"{path!r} is a symlink; refusing to write through it")
        if target.is_dir():
            raise ToolError(f"{path!r} is a directory")
        return target

    def relative(self, path: Path) -> str:
        """``path`` as the model should see it: relative to the workspace, with slashes."""
        relative = path.relative_to(self.root).as_posix()
        return relative if relative != "." else "."

    def open_file(self, path: str, target: Path, *, write: bool = False) -> int:
        """A descriptor of the regular file ``target`` (created when writing), after checking
        what it really is; the caller closes it. Writing does not truncate: the caller does,
        once the checks passed."""
        if target == self.root:
            raise ToolError(f"{path!r} is a directory; use list_files")
        flags = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        flags |= os.O_RDWR | os.O_CREAT if write else os.O_RDONLY
        try:
            parent = os.open(target.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise ToolError(f"{path!r} does not exist") from None
        except OSError as exc:
            raise ToolError(f"{path!r}: {exc.strerror}") from None
        try:
            if not _real_path(parent).is_relative_to(self.root):
                raise ToolError(f"{path!r} is outside the workspace")
            fd = os.open(target.name, flags, 0o644, dir_fd=parent)
        except FileNotFoundError:
            raise ToolError(f"{path!r} does not exist") from None
        except OSError as exc:
            raise ToolError(f"{path!r}: {exc.strerror}") from None
        finally:
            os.close(parent)
        try:
            self._check_descriptor(path, fd)
            if write and self.owner is not None and os.fstat(fd).st_uid != self.owner[0]:
                os.fchown(fd, *self.owner)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def make_parents(self, target: Path) -> None:
        """Create the missing directories above ``target`` (inside the workspace)."""
        missing: list[Path] = []
        here = target.parent
        while here != self.root and not here.exists():
            missing.append(here)
            here = here.parent
        for directory in reversed(missing):
            directory.mkdir(mode=0o755, exist_ok=True)
            if self.owner is not None:
                os.chown(directory, *self.owner, follow_symlinks=False)
        self._inside(self.relative(target.parent), target.parent)

    def _check_descriptor(self, path: str, fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise ToolError(f"{path!r} is a directory; use list_files")
        check_descriptor(
            repr(path), fd, self.root, self.device, hint=": copy it with run_command first"
        )

    def _pure(self, path: str) -> PurePosixPath:
        if "\x00" in path:
            raise ToolError(f"{path!r}: a path cannot contain a NUL character")
        pure = PurePosixPath(path or ".")
        if pure.is_absolute():
            raise ToolError(f"{path!r} is absolute; give a path relative to the workspace")
        return pure

    def _inside(self, path: str, candidate: Path) -> Path:
        try:
            resolved = candidate.resolve(strict=False)
        except (OSError, RuntimeError) as exc:
            raise ToolError(f"{path!r} cannot be resolved: {exc}") from None
        if not resolved.is_relative_to(self.root):
            raise ToolError(f"{path!r} is outside the workspace")
        return resolved


def check_descriptor(
    shown: str,
    fd: int,
    root: Path,
    device: int | None = None,
    *,
    place: str = "the workspace",
    hint: str = "",
) -> None:
    """Refuse the open file ``fd`` (named ``shown`` in the error) unless it is a regular file
    with one link only (a hard link can name a file outside), on ``device`` when one is given,
    whose real path is inside ``root`` (absolute, without symlinks)."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{shown} is not a regular file")
    if info.st_nlink > 1:
        raise ToolError(
            f"{shown} has {info.st_nlink} hard links; hard-linked files are refused "
            f"(a link can lead outside {place}){hint}"
        )
    outside = device is not None and info.st_dev != device
    if outside or not _real_path(fd).is_relative_to(root):
        raise ToolError(f"{shown} is outside {place}")


def _real_path(fd: int) -> Path:
    """Where the kernel says an open file is (a deleted file is nowhere)."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return Path("/proc/self/fd") / str(fd)
