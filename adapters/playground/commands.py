"""``/threadline …`` typed in the playground: the commands Slack and Discord offer
(:mod:`bot.api.commands`), on the thread the page has open, answered to the person alone."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from adapters.playground.surface import PlaygroundSurface, thread_key
from bot.api.commands import NotACommand, parse, run_command
from bot.api.inbound import Author

if TYPE_CHECKING:
    from bot.api.port import CoreApi

NAME = "/threadline"
_COMMAND = re.compile(r"\s*/threadline(?:\s+(.*?))?\s*", re.I | re.S)
NO_THREAD = (
    "`/threadline` works on the thread you have open: write a message to start one, or open "
    "one from the list of threads."
)


def command_words(text: str) -> str | None:
    """What follows ``/threadline`` in ``text``, or None when ``text`` is not a command."""
    match = _COMMAND.fullmatch(text)
    return None if match is None else match.group(1) or ""


async def answer(
    core: CoreApi,
    words: str,
    thread_id: str | None,
    surface: Callable[[str], PlaygroundSurface],
    actor: Author,
) -> str:
    """The command's answer for the person who typed it."""
    try:
        command = parse(words)
    except NotACommand as exc:
        return str(exc)
    if thread_id is None:
        return NO_THREAD
    return await run_command(core, command, thread_key(thread_id), surface(thread_id), actor)
