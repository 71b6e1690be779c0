"""A memory as the store keeps it, and what the store does with memories.

A memory belongs to a channel (as its adapter names it) and was made in one thread; with scope
``thread`` only that thread sees it, with scope ``channel`` every thread of the channel does.
Nothing reads memories across channels: every query names the channel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

Scope = Literal["thread", "channel"]


@dataclass(frozen=True, slots=True)
class Memory:
    id: str
    """Assigned by the store (``m12``); empty in a memory not stored yet."""
    channel: str
    key: str
    """The thread it was made in."""
    scope: Scope
    note: str
    author_id: str
    author_name: str
    created_at: float


class MemoryStore(Protocol):
    async def add_memory(self, draft: Memory, *, per_channel: int) -> Memory | None:
        """Store ``draft`` with a new id, unless its channel holds ``per_channel`` memories
        already (None)."""
        ...

    async def recent_memories(self, channel: str, key: str, limit: int) -> list[Memory]:
        """The memories the thread ``key`` of ``channel`` sees (its own and the channel's),
        newest first."""
        ...

    async def recall_memories(
        self, channel: str, key: str, terms: Sequence[str], limit: int
    ) -> list[Memory]:
        """The memories the thread sees in which every term starts a word (case does not
        matter), best match first. Terms are words: letters, digits and ``_``."""
        ...

    async def forget_memory(self, channel: str, key: str, memory_id: str) -> Memory | None:
        """Remove a memory the thread sees; the removed memory, or None when it sees none such."""
        ...
