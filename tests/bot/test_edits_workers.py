"""Edits with two workers on one PostgreSQL database: an edit that reaches the worker not
holding the run stops that run where it runs, and the new text is answered once (by whichever
worker takes the edit's turn); the same edit delivered to both workers is applied once."""

from __future__ import annotations

import asyncio
import time

from bot.api.inbound import Inbound
from bot.llm.messages import UserMessage
from bot.thread.edits import REPLACED
from tests.bot.test_workers import ALICE, KEY, WAIT_S, Cluster, Model, cluster, until
from tests.fakes.scripted_model import text
from tests.postgres import postgres_database

__all__ = ["cluster", "postgres_database"]


def asked(words: str, event_id: str) -> Inbound:
    return Inbound(KEY, ALICE, words, event_id, message_id="m1")


def edited(words: str, event_id: str) -> Inbound:
    return Inbound(
        KEY, ALICE, words, event_id, message_id="m1", posted_at=time.time(), addressed=False
    )


async def test_an_edit_on_the_other_worker_restarts_the_run_where_it_runs(
    cluster: Cluster,
) -> None:
    held = Model(text("The new answer."))
    held.hold = True  # the first call waits, and is stopped while it does
    other = Model(text("The new answer."))
    a = await cluster.worker("a", held)
    b = await cluster.worker("b", other)
    surface = cluster.platform.thread()
    work = await a.admit(asked("write the report", "e1"), surface)
    async with asyncio.timeout(WAIT_S):
        await held.held.wait()

    await b.admit(edited("write the summary", "e2"), surface)  # a holds the thread
    assert work is not None
    async with asyncio.timeout(WAIT_S):
        await work
    await until(lambda: "The new answer." in cluster.platform.text())
    await a.wait_idle()
    await b.wait_idle()
    assert surface.texts() == [REPLACED, "The new answer."]  # answered again once
    session = await a.store.load_session(KEY, time.time())
    people = [m.text for m in session.messages if isinstance(m, UserMessage)]
    assert people == ["write the summary"]
    # the new run is a's (nudged, the edit's turn after its stopped run) or b's (its poll finds
    # the edit once the stopped run let the lease go): either way one run, on the new text only
    [again] = held.requests[1:] + other.requests
    assert [m.text for m in again.messages if isinstance(m, UserMessage)] == ["write the summary"]


async def test_an_edit_delivered_to_both_workers_is_applied_once(cluster: Cluster) -> None:
    a = await cluster.worker("a", Model(text("First."), text("Again.")))
    b = await cluster.worker("b", Model(text("Again.")))  # a answers first; either may rerun
    surface = cluster.platform.thread()
    await a.handle(asked("hello", "e1"), surface)
    await asyncio.gather(
        a.handle(edited("hello there", "e2"), surface),
        b.handle(edited("hello there", "e2"), surface),
    )
    await until(lambda: "Again." in cluster.platform.text())
    await a.wait_idle()
    await b.wait_idle()
    shown = surface.texts()
    assert shown.count("Again.") == 1 and shown.count(REPLACED) == 1
