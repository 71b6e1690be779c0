"""Workers whose clocks are 30 s off (one ahead, one behind) on one PostgreSQL database: leases
live on the database's clock, so a worker cannot take a live lease however its clock reads, and
takes an expired one on time — neither early (a clock ahead) nor late (a clock behind)."""

from __future__ import annotations

import asyncio
import time

from bot.cluster.workers import STRANDED_AFTER_S
from bot.infra.clock import SystemClock
from bot.llm.messages import UserMessage
from bot.thread.recovery import RESUMING
from tests.bot.test_workers import (
    KEY,
    TTL_S,
    WAIT_S,
    Cluster,
    Model,
    cluster,
    hung,
    kill,
    lease_left,
    say,
    until,
)
from tests.fakes.scripted_model import text
from tests.postgres import postgres_database

__all__ = ["cluster", "postgres_database"]

SKEW_S = 30.0


class SkewedClock(SystemClock):
    """The system's clock, ``offset_s`` off in wall time (as a host with a drifting clock)."""

    def __init__(self, offset_s: float) -> None:
        self.offset_s = offset_s

    def now(self) -> float:
        return time.time() + self.offset_s


async def test_a_live_lease_stays_its_holders_and_an_expired_one_is_taken_on_time(
    cluster: Cluster,
) -> None:
    held = Model()
    held.hold = True
    ahead = await cluster.worker("ahead", held, SkewedClock(+SKEW_S))
    taking = Model(text("The whole answer."))
    behind = await cluster.worker("behind", taking, SkewedClock(-SKEW_S))
    work = await ahead.admit(say("Summarise the incident", "e1"), cluster.platform.thread())
    async with asyncio.timeout(WAIT_S):
        await held.held.wait()

    # behind's clock says ahead's lease ended 60 s ago (ahead set nothing by its clock): not taken
    assert await behind.store.take_lease(KEY, "behind", TTL_S) is None  # type: ignore[attr-defined]
    await behind.admit(say("and the numbers", "e2"), cluster.platform.thread())
    await until(
        lambda: ahead.supervisor.active[KEY].session.inbox != []
    )  # steered into ahead's run
    for _ in range(3):  # several of behind's polls, each a lease renewal of ahead's or more
        await behind.work.look(set(), full=True)  # type: ignore[attr-defined]
    assert [r["owner"] for r in await cluster.sql("SELECT owner FROM leases")] == ["ahead"]
    assert KEY in ahead.supervisor.active and RESUMING not in cluster.platform.text()

    async with hung(cluster.url, "ahead"):  # not known dead: its lease decides
        await kill(ahead)
        killed = time.monotonic()
        left = await lease_left(cluster, "ahead")  # about 2/3 of TTL_S or more (renewals)
        assert work is not None
        await until(lambda: "The whole answer." in cluster.platform.text())
        took = time.monotonic() - killed
    # taken once the lease expired on the database's clock (ahead's clock, 60 s past behind's,
    # moved nothing), soon after it: a clock read on either worker would be SKEW_S off. The upper
    # bound leaves room for a loaded machine and still fails long before SKEW_S.
    assert left > 0.0 and left - 0.05 <= took < TTL_S + SKEW_S / 3, (left, took)
    assert cluster.platform.text().count("The whole answer.") == 1
    [asked] = taking.requests  # the run taken over, with the message steered into it
    said = [m.text for m in asked.messages if isinstance(m, UserMessage)]
    assert said == ["Summarise the incident", "and the numbers"]
    await behind.wait_idle()
    [lease] = await cluster.sql("SELECT owner FROM leases")
    assert lease["owner"] == ""  # behind let it go when its run ended


async def test_a_message_accepted_by_a_worker_whose_clock_is_ahead_is_not_left_waiting(
    cluster: Cluster,
) -> None:
    ahead_clock = SkewedClock(+SKEW_S)
    ahead = await cluster.worker("ahead", Model(), ahead_clock)
    taking = Model(text("Answered by the other."))
    await cluster.worker("behind", taking, SkewedClock(-SKEW_S))
    message = UserMessage(
        text="Is anyone there?", author_id="test:alice", author_name="Alice", event_id="e1"
    )
    # ahead accepts the message as its core does, and dies before it answers it
    accepted = time.monotonic()
    assert await ahead.store.accept(KEY, message, ahead_clock.now())  # type: ignore[attr-defined]
    await kill(ahead)
    await until(lambda: "Answered by the other." in cluster.platform.text())
    took = time.monotonic() - accepted
    # stamped and compared on the database's clock: picked up once STRANDED_AFTER_S has passed
    # there (behind's clock, 60 s behind ahead's, would have waited a minute more)
    # (the upper bound leaves room for a loaded machine and still fails long before SKEW_S)
    assert STRANDED_AFTER_S <= took < STRANDED_AFTER_S + SKEW_S / 3, took
    assert [m.text for m in taking.requests[0].messages if isinstance(m, UserMessage)] == [
        "Is anyone there?"
    ]
