"""Where and when a run is: the note the model reads at the end of each call's messages — the
date and time (UTC, and the channel's ``timezone`` when one is set), the platform, the channel's
name and the people who wrote in the thread.

It is said anew for every model call, so a thread that runs for days never reads a stale date,
and it sits before the latest message a person wrote, so the unchanged prefix of the request
stays cacheable. :class:`Situations` keeps each thread's note and makes it again only when what
it says changes (the minute, the place, the people): consecutive calls send the very same
message, whose JSON, and the request's text up to it, are then reused (:mod:`bot.llm.wire`).
Names come from people (display names, channel names): they are given as data, cut to a short
length, never as instructions."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo

from bot.llm.messages import Message, SystemMessage, UserMessage
from bot.llm.wire import as_data

PLATFORMS = {"slack": "Slack", "discord": "Discord", "playground": "the Threadline playground"}
"""A thread key's first part, as people name the platform."""
MAX_PEOPLE = 20
"""At most this many names are listed (the most recent writers), with how many more there are."""
MAX_NAME = 80
"""A display or channel name longer than this is cut."""
CACHED_THREADS = 1024
"""Threads whose note :class:`Situations` keeps (the most recently asked)."""


def situation_note(
    now: float,
    key: str,
    *,
    zone: str | None,
    channel: str | None,
    direct: bool,
    messages: Sequence[Message],
) -> SystemMessage:
    """The note for a model call at ``now`` (seconds since the epoch) in the thread ``key``."""
    return _note(now, key, zone, channel, direct, writers(messages))


def _note(
    now: float, key: str, zone: str | None, channel: str | None, direct: bool, people: list[str]
) -> SystemMessage:
    lines = [f"Now: {_when(now, zone)}.", _where(key, channel, direct)]
    if people:
        shown = people[-MAX_PEOPLE:]
        more = len(people) - len(shown)
        listed = "\n".join(shown) + (f"\n(and {more} more)" if more else "")
        lines.append("People who have written in this thread, one per line:")
        lines.append(as_data("people", listed))
    return SystemMessage(text="\n".join(lines))


def _when(now: float, zone: str | None) -> str:
    utc = datetime.fromtimestamp(now, ZoneInfo("UTC"))
    said = f"{utc:%A %d %B %Y, %H:%M} UTC"
    if zone and zone != "UTC":
        local = utc.astimezone(ZoneInfo(zone))
        said += f" ({local:%A %H:%M} in {zone}, the channel's time zone)"
    return said


def _where(key: str, channel: str | None, direct: bool) -> str:
    platform = PLATFORMS.get(key.partition(":")[0], "a chat platform")
    if direct:
        return f"Place: a direct message with you on {platform}."
    if channel:
        return f"Place: a thread in the channel {_name(channel)!r} on {platform}."
    return f"Place: a thread on {platform}."


def writers(messages: Sequence[Message]) -> list[str]:
    """The people who wrote in the thread, each once, in the order they last wrote."""
    seen: dict[str, None] = {}
    _add_writers(seen, messages)
    return list(seen)


def _add_writers(seen: dict[str, None], messages: Sequence[Message]) -> bool:
    """Move each writer of ``messages`` to the end of ``seen``; True if any wrote."""
    wrote = False
    for message in messages:
        if isinstance(message, UserMessage) and message.author_name:
            name = _name(message.author_name)
            seen.pop(name, None)
            seen[name] = None
            wrote = True
    return wrote


@dataclass(slots=True)
class _Read:
    """What one thread's note was made of, and the note."""

    first: Message | None = None
    """The transcript's first message when it was read (a compacted transcript has another)."""
    last: Message | None = None
    """Its message at ``count - 1``."""
    count: int = 0
    seen: dict[str, None] = field(default_factory=dict)
    said: tuple[object, ...] = ()
    note: SystemMessage | None = None

    def follows(self, messages: Sequence[Message]) -> bool:
        """``messages`` is the transcript read last, with messages added at its end."""
        if self.count == 0:
            return self.first is None
        return (
            len(messages) >= self.count
            and messages[0] is self.first
            and messages[self.count - 1] is self.last
        )


class Situations:
    """Each thread's note, made again only when what it says changes; the people are read
    only from the messages added since the last call."""

    def __init__(self, size: int = CACHED_THREADS) -> None:
        self._size = size
        self._read: OrderedDict[str, _Read] = OrderedDict()

    def note(
        self,
        now: float,
        key: str,
        *,
        zone: str | None,
        channel: str | None,
        direct: bool,
        messages: Sequence[Message],
    ) -> SystemMessage:
        """The same note as :func:`situation_note` (the same object while nothing changes)."""
        read = self._people(key, messages)
        said = (int(now // 60), zone, channel, direct)  # the note says the time to the minute
        if read.note is None or read.said != said:
            read.said, read.note = said, _note(now, key, zone, channel, direct, list(read.seen))
        return read.note

    def _people(self, key: str, messages: Sequence[Message]) -> _Read:
        read = self._read.pop(key, None)
        if read is None or not read.follows(messages):
            read = _Read()
        if _add_writers(read.seen, messages[read.count :]):
            read.note = None
        read.count = len(messages)
        read.first = messages[0] if messages else None
        read.last = messages[-1] if messages else None
        self._read[key] = read
        if len(self._read) > self._size:
            self._read.popitem(last=False)
        return read


def _name(text: str) -> str:
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return flat if len(flat) <= MAX_NAME else flat[: MAX_NAME - 1] + "…"
