"""Replies that came before their thread's mention, kept until it comes.

Slack does not promise the order of events: a reply written seconds after a mention can reach
the app before the mention's own events (or while the mention is still being accepted). A reply
without a mention is answered only in a thread the bot has joined, so, seen first, it would be
dropped. Instead it is kept here for :data:`KEEP_S` seconds; when a message joins the bot to
the thread, the replies written after it are answered next, in the order they were written.

Bounds: :data:`PER_THREAD` replies per thread and :data:`THREADS` threads (the oldest go
first); replies in threads the bot never joins are forgotten after :data:`KEEP_S`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from adapters.slack.parse import PersonMessage
from bot.api.inbound import ThreadKey

KEEP_S = 60.0
PER_THREAD = 20
THREADS = 500


@dataclass
class EarlyReplies:
    _kept: OrderedDict[ThreadKey, list[tuple[float, PersonMessage]]] = field(
        default_factory=OrderedDict
    )

    def keep(self, key: ThreadKey, message: PersonMessage, now: float) -> None:
        """``message`` came in a thread the bot has not joined (yet)."""
        self._forget(now)
        kept = self._kept.setdefault(key, [])
        if len(kept) < PER_THREAD:
            kept.append((now, message))
        while len(self._kept) > THREADS:
            self._kept.popitem(last=False)

    def after(self, key: ThreadKey, ts: str, now: float) -> list[PersonMessage]:
        """The bot joined ``key`` with the message ``ts``: the replies kept for it that were
        written after that message, oldest first (the earlier ones it read as history)."""
        self._forget(now)
        kept = self._kept.pop(key, [])
        later = [m for _, m in kept if _ts(m.ts) > _ts(ts)]
        return sorted(later, key=lambda m: _ts(m.ts))

    def __len__(self) -> int:
        return sum(len(kept) for kept in self._kept.values())

    def _forget(self, now: float) -> None:
        for key in [k for k, kept in self._kept.items() if kept[-1][0] < now - KEEP_S]:
            del self._kept[key]


def _ts(ts: str) -> float:
    try:
        return float(ts)
    except ValueError:
        return 0.0
