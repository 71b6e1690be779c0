"""A huge answer: its first part in the thread, the rest as a file (``answer.md``).

A model may write megabytes (a dump, a loop it cannot leave). Split into messages, 5 MB would be
500 Slack messages or 2,600 Discord ones, the thread blocked while they are posted. Past
``after`` characters (``THREADLINE_ANSWER_FILE_AFTER``) the reply takes no more text: the line
being written is finished (within :data:`LINE_SLACK` more characters), and everything after it
is kept aside. When the reply ends, it gets a line saying where the rest is, and the rest is
posted below it as a file, through the surface's file transfer. A surface without files shows
the whole answer as before.
"""

from __future__ import annotations

import logging
import re

from bot.api.transfer import FileTransfer
from bot.errors import SurfaceError

log = logging.getLogger(__name__)

FILE_NAME = "answer.md"
LINE_SLACK = 2_000
"""How far past the limit the reply may go to end at a line break."""
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.M)


class Overflow:
    """What of one reply's text is shown, and what goes to the file."""

    def __init__(self, after: int | None, files: FileTransfer | None) -> None:
        self._after = after if files is not None else None
        self._files = files
        self._shown: list[str] = []
        self._shown_chars = 0
        self._rest: list[str] = []
        self._notes: list[str] = []

    def take(self, text: str) -> str:
        """The part of ``text`` the reply shows (all of it until the limit); the rest is kept."""
        if self._rest:
            self._rest.append(text)
            return ""
        if self._after is None:
            return text
        if self._shown_chars + len(text) <= self._after:
            return self._show(text)
        cut = self._cut(text)
        if cut == len(text):
            return self._show(text)
        self._rest.append(text[cut:])
        return self._show(text[:cut])

    def note(self, text: str) -> bool:
        """A notice (``Stopped by Ada.``) while overflowing: shown after the line about the
        file rather than lost in it. False when the reply still takes text."""
        if self._rest:
            self._notes.append(text)
        return bool(self._rest)

    def ending(self) -> str:
        """What the reply ends with: the line saying where the rest is (and the notices kept)."""
        if not self._rest:
            return ""
        size = sum(len(part) for part in self._rest)
        close = "\n```" if _open_fence("".join(self._shown)) else ""
        line = f"_… the rest of the answer ({size:,} more characters) is in {FILE_NAME}, below._"
        notes = "".join(f"\n\n_{note}_" for note in self._notes)
        return f"{close}\n\n{line}{notes}"

    async def post_rest(self) -> str | None:
        """Post the rest as a file (once); a line for the thread when the platform refused."""
        rest, self._rest, self._notes = "".join(self._rest), [], []
        if not rest or self._files is None:
            return None
        try:
            await self._files.send(FILE_NAME, rest.lstrip("\n").encode())
        except SurfaceError as exc:
            log.warning("could not post the rest of an answer as a file: %s", exc)
            return f"⚠️ The rest of the answer could not be posted as {FILE_NAME}: {exc}"
        return None

    def _cut(self, text: str) -> int:
        """Where ``text`` stops being shown: after the first line break past the limit, and
        at most :data:`LINE_SLACK` characters past it."""
        assert self._after is not None
        past = max(0, self._after - self._shown_chars)
        room = self._after + LINE_SLACK - self._shown_chars
        newline = text.find("\n", past)
        if newline != -1:
            return min(newline + 1, room)
        return min(len(text), room)

    def _show(self, text: str) -> str:
        self._shown.append(text)
        self._shown_chars += len(text)
        return text


def _open_fence(text: str) -> bool:
    """Whether ``text`` ends inside a fenced code block (an odd number of fence lines)."""
    return len(_FENCE.findall(text)) % 2 == 1
