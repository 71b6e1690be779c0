"""Where and when a run is: the note the model reads at the end of each call's messages — the
date and time (UTC, and the channel's ``timezone`` when one is set), the platform, the channel's
name and the people who wrote in the thread.

It is written anew for every model call, so a thread that runs for days never reads a stale date,
and it sits after the transcript, so the unchanged prefix of the request stays cacheable. Names
come from people (display names, channel names): they are given as data, cut to a short length,
never as instructions."""

from __future__ import annotations

from collections.abc import Sequence
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
    lines = [f"Now: {_when(now, zone)}.", _where(key, channel, direct)]
    people = writers(messages)
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
    for message in messages:
        if isinstance(message, UserMessage) and message.author_name:
            name = _name(message.author_name)
            seen.pop(name, None)
            seen[name] = None
    return list(seen)


def _name(text: str) -> str:
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return flat if len(flat) <= MAX_NAME else flat[: MAX_NAME - 1] + "…"
