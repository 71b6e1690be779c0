"""The store contract for memories (:class:`bot.memory.model.MemoryStore`), run on every
implementation (see ``conftest.py``). Only the Protocols' methods are used."""

from __future__ import annotations

import asyncio
import dataclasses

from bot.memory.model import Memory, Scope
from bot.storage.protocol import Store
from tests.bot.storage.conftest import Stores

C1, C2 = "test:c1", "test:c2"
T1, T2 = "test:c1:t1", "test:c1:t2"
OTHER = "test:c2:t9"


def draft(
    note: str, key: str = T1, channel: str = C1, scope: Scope = "channel", at: float = 1.0
) -> Memory:
    return Memory("", channel, key, scope, note, "test:U1", "Alice", at)


async def keep(store: Store, memory: Memory, per_channel: int = 1000) -> Memory:
    added = await store.add_memory(memory, per_channel=per_channel)
    assert added is not None
    return added


async def test_a_memory_is_stored_with_an_id_and_survives_a_reopen(
    stores: Stores, store: Store
) -> None:
    kept = await keep(store, draft("The deploy key lives in the vault"))
    assert kept.id and dataclasses.replace(kept, id="") == draft(
        "The deploy key lives in the vault"
    )
    store = await stores.reopen(store)
    assert await store.recent_memories(C1, T1, 10) == [kept]
    assert await store.recall_memories(C1, T1, ["vault"], 10) == [kept]


async def test_a_thread_sees_its_own_memories_and_its_channels_never_another_channels(
    store: Store,
) -> None:
    shared = await keep(store, draft("release train leaves on Tuesday", at=1.0))
    mine = await keep(store, draft("Tuesday standup moved", scope="thread", at=2.0))
    theirs = await keep(store, draft("Tuesday is a holiday", key=T2, scope="thread", at=3.0))
    foreign = await keep(
        store, draft("Tuesday secret of channel two", key=OTHER, channel=C2, at=4.0)
    )
    assert await store.recent_memories(C1, T1, 10) == [mine, shared]  # newest first
    assert await store.recent_memories(C1, T2, 10) == [theirs, shared]
    assert await store.recent_memories(C2, OTHER, 10) == [foreign]
    assert {m.id for m in await store.recall_memories(C1, T1, ["tuesday"], 10)} == {
        mine.id,
        shared.id,
    }
    assert await store.recall_memories(C1, T1, ["secret"], 10) == []
    assert await store.recall_memories(C2, OTHER, ["release"], 10) == []
    # forgetting needs to see it: another channel's, or another thread's own, stays
    assert await store.forget_memory(C1, T1, foreign.id) is None
    assert await store.forget_memory(C1, T1, theirs.id) is None
    assert await store.forget_memory(C2, OTHER, shared.id) is None
    assert (
        await store.forget_memory(C1, T2, shared.id) == shared
    )  # a channel memory: any thread of it
    assert await store.recall_memories(C1, T1, ["release"], 10) == []
    assert await store.forget_memory(C1, T1, shared.id) is None
    assert await store.forget_memory(C1, T1, "m-garbage") is None


async def test_recall_needs_every_word_as_a_word_start_whatever_the_case(store: Store) -> None:
    deploy = await keep(store, draft("Deployment runs from the CI server"))
    keys = await keep(store, draft("Deploy keys rotate monthly"))
    await keep(store, draft("Lunch is at noon"))
    assert {m.id for m in await store.recall_memories(C1, T1, ["deploy"], 10)} == {
        deploy.id,
        keys.id,
    }
    assert await store.recall_memories(C1, T1, ["DEPLOY", "keys"], 10) == [keys]
    assert await store.recall_memories(C1, T1, ["ploy"], 10) == []  # not inside a word
    assert await store.recall_memories(C1, T1, ["deploy", "lunch"], 10) == []
    assert len(await store.recall_memories(C1, T1, ["deploy"], 1)) == 1


async def test_words_that_are_fts_operators_are_searched_as_words(store: Store) -> None:
    kept = await keep(store, draft("NEAR the door AND NOT the window OR the roof"))
    for terms in (["NEAR"], ["AND"], ["NOT", "OR"], ["and", "near"]):
        assert await store.recall_memories(C1, T1, terms, 10) == [kept], terms
    assert await store.recall_memories(C1, T1, [], 10) == []


async def test_the_limit_per_channel_holds_under_concurrent_requests(store: Store) -> None:
    results = await asyncio.gather(
        *(store.add_memory(draft(f"note {i}"), per_channel=25) for i in range(100))
    )
    assert sum(r is not None for r in results) == 25
    assert await keep(store, draft("elsewhere", key=OTHER, channel=C2), per_channel=25)
    assert len(await store.recent_memories(C1, T1, 1000)) == 25
