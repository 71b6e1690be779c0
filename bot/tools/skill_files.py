"""The skills on disk: ``<root>/<name>/SKILL.md``, each with a front matter naming it and
describing when it applies::

    ---
    name: release-checklist
    description: How we cut a release: version bump, changelog, tag, announcement.
    ---
    1. ...

A skill whose front matter is missing, or whose ``name`` differs from its folder's, is left
out (and logged). The list is read again when the folder changes (a skill added or removed:
noticed at the next model call) or, checked every :data:`RECHECK_S` seconds, when a skill
file changed. Reading a
skill never leaves the folder: the name must be a plain name, and the file must be a regular
file with one link only (a hard link can name a file outside) whose real path is inside the
folder, the check the workspace's files pass (``bot.tools.sandbox.check_descriptor``).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path

from bot.infra.clock import Clock, SystemClock
from bot.tools.base import ToolError
from bot.tools.sandbox import check_descriptor

log = logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 4096
"""The most of a skill's instructions a thread loads."""
MAX_FILE_BYTES = 1_000_000
RECHECK_S = 5.0
"""How often the skill files themselves are checked for changes (the folder: at every call)."""
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_FIELD = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:\s*(.*)$")


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    path: Path
    size: int
    """Bytes of its instructions (the file without its front matter)."""


def front_matter(text: str) -> tuple[dict[str, str], str] | None:
    """The ``key: value`` fields between the leading ``---`` lines, and the rest; None when
    the text does not start with a front matter."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None
    fields: dict[str, str] = {}
    for number, line in enumerate(lines[1:], 1):
        if line.strip() == "---":
            return fields, "".join(lines[number + 1 :])
        match = _FIELD.match(line.strip())
        if match:
            fields[match.group(1).lower()] = match.group(2).strip().strip("'\"")
    return None


class Catalog:
    def __init__(self, root: Path, clock: Clock | None = None) -> None:
        self.root = root
        self._clock = clock or SystemClock()
        self._top: int | None = -1
        self._checked = 0.0
        self._seen: Hashable = None
        self._skills: dict[str, Skill] = {}
        self.left_out: dict[str, str] = {}
        """Skills found but not offered, with the reason (as of the last reading)."""

    def generation(self) -> Hashable:
        """Changes when the folder or one of its skill files changes (one ``stat`` a call)."""
        try:
            top: int | None = self.root.stat().st_mtime_ns
        except OSError:
            top = None
        now = self._clock.monotonic()
        if top != self._top or now - self._checked >= RECHECK_S:
            self._top, self._checked = top, now
            stamps = self._stamps()
            if stamps != self._seen:
                self._seen = stamps
                self._skills = self._scan()
        return self._seen

    def skills(self) -> dict[str, Skill]:
        self.generation()
        return self._skills

    def read(self, skill: Skill) -> tuple[str, int]:
        """The skill's instructions, at most :data:`MAX_SKILL_BYTES` of them, and their size."""
        body = self._body(skill.name)
        raw = body.encode()
        if len(raw) <= MAX_SKILL_BYTES:
            return body, len(raw)
        return raw[:MAX_SKILL_BYTES].decode(errors="ignore"), len(raw)

    def _stamps(self) -> Hashable:
        try:
            entries = sorted(os.scandir(self.root), key=lambda e: e.name)
            top = self.root.stat().st_mtime_ns
        except OSError:
            return None
        stamps: list[tuple[str, int]] = []
        for entry in entries:
            try:
                stamps.append((entry.name, os.stat(Path(entry.path, SKILL_FILE)).st_mtime_ns))
            except OSError:
                continue
        return top, tuple(stamps)

    def _scan(self) -> dict[str, Skill]:
        found: dict[str, Skill] = {}
        self.left_out = {}
        try:
            entries = sorted(p.name for p in self.root.iterdir())
        except OSError:
            return found
        for name in entries:
            if not NAME.match(name) or not (self.root / name / SKILL_FILE).exists():
                continue
            try:
                found[name] = self._skill(name)
            except ToolError as exc:
                self.left_out[name] = str(exc)
                log.warning("skill %s is left out: %s", name, exc)
        if found:
            log.info("skills in %s: %s", self.root, ", ".join(found))
        return found

    def _skill(self, name: str) -> Skill:
        parsed = front_matter(self._file(name))
        if parsed is None or not parsed[0].get("description"):
            raise ToolError(f"its {SKILL_FILE} needs a front matter with name and description")
        fields, body = parsed
        if fields.get("name") != name:
            raise ToolError(
                f"its front matter names it {fields.get('name')!r}, not {name!r} as its folder"
            )
        return Skill(
            name, fields["description"], self.root / name / SKILL_FILE, len(body.strip().encode())
        )

    def _body(self, name: str) -> str:
        parsed = front_matter(self._file(name))
        if parsed is None:
            raise ToolError(f"the skill {name} has no front matter any more")
        return parsed[1].strip()

    def _file(self, name: str) -> str:
        """The text of ``<root>/<name>/SKILL.md``, refused when it leads out of the folder."""
        if not NAME.match(name):
            raise ToolError(f"{name!r} is not a skill name")
        root = self.root.resolve()
        path = (root / name / SKILL_FILE).resolve()
        if not path.is_relative_to(root):
            raise ToolError(f"the skill {name} leads out of the skills folder")
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            raise ToolError(f"the skill {name} cannot be read: {exc.strerror}") from None
        with os.fdopen(fd, "rb") as handle:
            check_descriptor(
                f"the skill {name}'s {SKILL_FILE}", fd, root, place="the skills folder"
            )
            raw = handle.read(MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES:
            raise ToolError(
                f"the skill {name}'s {SKILL_FILE} is larger than {MAX_FILE_BYTES:,} bytes"
            )
        return raw.decode("utf-8", errors="replace")
