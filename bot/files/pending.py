"""The files of an accepted message, fetched when its turn in the thread comes.

A message is accepted — stored with the files it names — before any byte is downloaded
(:mod:`bot.thread.deliveries`), so the platform's acknowledgement never waits for a download,
and a crash during one loses nothing: the message is answered after the restart and its files
fetched then. The files are fetched in the message's place in its thread's line (a later
message of the thread waits; other threads do not), and what they hold is added to the
message the model reads, with a notice for the thread about what could not be read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from bot.api.inbound import Attachment, ThreadKey
from bot.api.surface import Surface
from bot.api.transfer import file_transfer
from bot.files.intake import Intake
from bot.llm.messages import UserMessage


class FilesOf(Protocol):
    async def files_of(self, message: UserMessage) -> tuple[Attachment, ...]: ...


class PendingFiles:
    def __init__(
        self, intake: Intake, arrivals: FilesOf, vision: Callable[[ThreadKey], bool]
    ) -> None:
        self._intake = intake
        self._arrivals = arrivals
        self._vision = vision

    async def named(self, message: UserMessage) -> bool:
        """Whether ``message`` was accepted with files still to fetch."""
        return bool(await self._arrivals.files_of(message))

    async def read(
        self, key: ThreadKey, message: UserMessage, surface: Surface
    ) -> tuple[UserMessage, str | None]:
        """``message`` with what its files hold (saved in the workspace, worded for the model,
        images shown), and the notice about what could not be read (None: all read)."""
        files = await self._arrivals.files_of(message)
        if not files:
            return message, None
        got = await self._intake.take(key, files, file_transfer(surface), vision=self._vision(key))
        text = "\n\n".join(t for t in (message.text, got.note) if t)
        read = message.model_copy(update={"text": text, "images": message.images + got.images})
        return read, file_notice(got.problems)


def file_notice(problems: Sequence[str]) -> str | None:
    """What the thread is told about files that could not be read."""
    if not problems:
        return None
    return "About the files: " + "; ".join(problems) + "."


def joined(*notices: str | None) -> str | None:
    """Notices shown together, in order (None: none)."""
    return " ".join(n for n in notices if n) or None
