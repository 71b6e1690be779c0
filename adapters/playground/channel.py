"""The playground's channel, read for ``read_channel``: its threads, each as its first message
with its author, its link in the page (``#/t/<thread>``) and how many replies it has; a
thread counts from when it started."""

from __future__ import annotations

from collections.abc import Sequence

from adapters.playground.state import PlaygroundState, ThreadData
from bot.api.channel import ChannelMessage


class PlaygroundChannelHistory:
    def __init__(self, state: PlaygroundState) -> None:
        self._state = state

    async def recent(self, since: float | None, limit: int) -> Sequence[ChannelMessage]:
        started = [
            t
            for t in self._state.threads()
            if t.messages and (since is None or t.messages[0].created_at > since)
        ]
        started.sort(key=lambda t: t.messages[0].created_at)
        return [_message(t) for t in started[-limit:]] if limit > 0 else []


def _message(thread: ThreadData) -> ChannelMessage:
    first = thread.messages[0]
    return ChannelMessage(
        author=first.author_name + (" (an app)" if first.bot else ""),
        text=first.text,
        at=first.created_at,
        link=f"#/t/{thread.id}",
        replies=len(thread.messages) - 1,
    )
