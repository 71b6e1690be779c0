"""A streamed reply on a recording surface: what the thread shows, and when."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from bot.api.surface import Button, SurfaceLimits
from bot.errors import SurfaceError
from bot.infra.clock import ManualClock
from bot.present.budget import EditBudget
from bot.present.reply import ReplyStream
from bot.present.split import open_block, split_message
from bot.present.sweep import DraftSweeper
from bot.sessions.model import LiveMessage
from tests.fakes.surface import (
    DEFAULT_LIMITS,
    EditLedger,
    RecordingSurface,
    drive,
    run_until,
    settle,
)

STOP = (Button("stop:run", "Stop", "danger"),)


class Thread:
    def __init__(
        self,
        clock: ManualClock,
        limits: SurfaceLimits = DEFAULT_LIMITS,
        budget: EditBudget | None = None,
        *,
        stop: bool = False,
        **surface_options: object,
    ) -> None:
        self.clock = clock
        self.surface = RecordingSurface(clock, limits, strict=True, **surface_options)  # type: ignore[arg-type]
        self.posted: list[str] = []
        self.live: dict[str, LiveMessage] = {}
        """What a restart would mend now, by message id."""
        self.stream = ReplyStream(
            self.surface, clock, budget or EditBudget(clock, limits.edits_per_minute), self.record
        )
        if stop:  # as the supervisor's presenter: ids recorded before a Stop button shows
            self.stream.set_buttons(STOP)

    async def record(self, message_id: str, live: LiveMessage | None) -> None:
        if live is None:
            self.live.pop(message_id, None)
            return
        if message_id not in self.posted:
            assert not self.surface.messages[message_id].buttons, "recorded before it shows buttons"
            self.posted.append(message_id)
        self.live[message_id] = live

    def assert_recorded(self, *, shown_any: bool = True) -> None:
        """Every message that showed buttons was recorded (before it showed them)."""
        shown = [m.id for m in self.surface.messages.values() if m.had_buttons]
        assert set(shown) <= set(self.posted)
        assert bool(shown) is shown_any

    async def feed(self, deltas: list[str], every: float) -> None:
        for delta in deltas:
            self.stream.append(delta)
            await settle()
            await self.clock.advance(every)

    async def finish(self, suffix: str = "") -> None:
        await drive(self.clock, self.stream.finish(suffix), step=0.1)


async def test_first_text_is_visible_at_once() -> None:
    thread = Thread(ManualClock(), stop=True)
    thread.stream.append("Hel")
    await settle()
    assert thread.surface.texts() == ["Hel"]
    assert thread.surface.calls[0].at == 0.0
    assert thread.posted == [] and thread.surface.messages["m1"].buttons == ()
    await run_until(thread.clock, lambda: thread.surface.messages["m1"].buttons == STOP)
    assert thread.posted == ["m1"], "its id was recorded before its Stop button showed"
    await thread.finish()
    assert thread.surface.messages["m1"].buttons == ()


async def test_a_hundred_deltas_in_a_second_cost_at_most_two_edits() -> None:
    thread = Thread(ManualClock())
    deltas = [f"w{i} " for i in range(100)]
    await thread.feed(deltas, every=0.01)
    await thread.finish()

    assert thread.surface.texts() == ["".join(deltas).rstrip()]
    assert thread.surface.count("post") == 1
    assert thread.surface.edit_count() <= 2
    assert thread.surface.count("edit", "SurfaceRateLimited") == 0


async def test_edits_send_the_newest_text_only_and_respect_the_interval() -> None:
    thread = Thread(ManualClock())
    deltas = [f"t{i} " for i in range(200)]
    await thread.feed(deltas, every=0.05)  # 10 s of streaming
    await thread.finish()

    sent = [c.text or "" for c in thread.surface.calls if c.op in ("post", "edit")]
    assert sent == sorted(sent, key=len), "never an older snapshot after a newer one"
    assert all(b.startswith(a.rstrip()) for a, b in zip(sent, sent[1:], strict=False))
    assert 8 <= thread.surface.edit_count() <= 11
    times = [c.at for c in thread.surface.calls if c.op in ("post", "edit")][:-1]
    assert all(b - a >= 1.0 - 1e-9 for a, b in zip(times, times[1:], strict=False)), (
        "interim edits keep the interval (the final one does not wait for it)"
    )


async def test_the_final_edit_does_not_wait_for_the_interval_of_interim_edits() -> None:
    thread = Thread(ManualClock())
    await thread.feed([f"t{i} " for i in range(30)], every=0.05)  # 1.5 s: a post and an edit
    last_interim = thread.surface.calls[-1].at
    started = thread.clock.monotonic()
    await thread.finish()

    final = thread.surface.calls[-1]
    assert final.op == "edit" and final.text == "".join(f"t{i} " for i in range(30)).rstrip()
    assert final.at - started < 1.0 - 1e-9 and final.at - last_interim < 1.0


async def test_final_text_is_exact_after_a_storm_of_429s() -> None:
    thread = Thread(ManualClock())
    thread.stream.append("partial")
    await settle()
    thread.surface.rate_limit_next(6, retry_after=3.0)
    await thread.feed([" more", " and more"], every=0.5)
    await thread.finish(" — the end")

    assert thread.surface.texts() == ["partial more and more — the end"]
    assert thread.surface.count("edit", "SurfaceRateLimited") == 6
    assert thread.surface.ledger.violations == 0, "retry-after was honoured every time"
    assert thread.clock.monotonic() >= 18.0


async def test_long_text_continues_in_new_messages_with_code_blocks_intact() -> None:
    limits = replace(DEFAULT_LIMITS, max_chars=300)
    thread = Thread(ManualClock(), limits, stop=True)
    code = "\n".join(f"    step_{i}()  # do thing {i}" for i in range(40))
    text = "Here is the plan.\n\n```python\ndef main():\n" + code + "\n```\n\nThat is all.\n"
    await thread.feed([text[i : i + 7] for i in range(0, len(text), 7)], every=0.05)
    await thread.finish()

    expected = split_message(text, 300)
    assert len(expected) >= 4
    assert thread.surface.texts() == expected
    thread.assert_recorded()
    for message in thread.surface.live():
        assert open_block(message.text) is None
    for message in thread.surface.live()[:-1]:
        final_chunk_at = next(
            c.at
            for c in thread.surface.calls
            if c.message_id == message.id and c.text == message.text
        )
        later = [
            c for c in thread.surface.calls if c.message_id == message.id and c.at > final_chunk_at
        ]
        assert later == [], "a completed message is not edited again"


async def test_streaming_code_shows_as_a_closed_block() -> None:
    thread = Thread(ManualClock())
    thread.stream.append("Look:\n\n```python\nprint(1)")
    await settle()
    assert thread.surface.texts() == ["Look:\n\n```python\nprint(1)\n```"]
    thread.stream.append("\nprint(2)\n```\nDone.")
    await thread.finish()
    assert thread.surface.texts() == ["Look:\n\n```python\nprint(1)\nprint(2)\n```\nDone."]


async def test_a_refused_edit_continues_in_a_new_message_without_loss() -> None:
    thread = Thread(ManualClock(), stop=True)
    thread.stream.append("first part")
    await settle()
    thread.surface.refuse_edits("m1")
    await thread.feed([", second part", ", third part"], every=0.6)
    await thread.finish(".")

    assert thread.surface.texts() == ["first part, second part, third part."]
    assert thread.surface.messages["m1"].deleted
    thread.assert_recorded(shown_any=False)  # m1's edits were refused, m2 came final


async def test_a_message_the_platform_finds_too_long_is_split_tighter() -> None:
    limits = replace(DEFAULT_LIMITS, max_chars=400)
    thread = Thread(ManualClock(), limits, accepts_chars=300)
    text = " ".join(f"word{i}" for i in range(150))
    await thread.feed([text[i : i + 50] for i in range(0, len(text), 50)], every=0.3)
    await thread.finish()

    texts = thread.surface.texts()
    assert all(len(t) <= 300 for t in texts)
    assert " ".join(texts).split() == text.split()
    assert texts == split_message(text, 256)


async def test_footer_shows_while_streaming_and_never_in_the_final() -> None:
    thread = Thread(ManualClock())
    thread.stream.append("Let me look.")
    await settle()
    thread.stream.set_footer("_running `grep`…_")
    await run_until(thread.clock, lambda: thread.surface.edit_count() == 1)
    assert thread.surface.texts() == ["Let me look.\n\n_running `grep`…_"]
    thread.stream.set_footer(None)
    thread.stream.append(" Found it.")
    await thread.finish()
    assert thread.surface.texts() == ["Let me look. Found it."]


async def test_a_footer_shown_alone_is_taken_over_by_the_text_or_goes() -> None:
    thread = Thread(ManualClock(), stop=True)
    thread.stream.set_footer("_running `grep`…_")  # an ordinary footer waits for text
    await run_until(thread.clock, lambda: True)
    assert thread.surface.calls == []
    thread.stream.set_footer("▸ `delegate_task` · working: step 1", alone=True)
    await run_until(
        thread.clock, lambda: thread.surface.texts() == ["▸ `delegate_task` · working: step 1"]
    )
    thread.stream.set_footer("▸ `delegate_task` · working: step 2, grep", alone=True)
    await run_until(thread.clock, lambda: "step 2, grep" in thread.surface.texts()[0])
    thread.stream.set_footer(None)
    thread.stream.append("Found it.")
    await thread.finish()
    assert thread.surface.texts() == ["Found it."]
    thread.assert_recorded()

    gone = Thread(ManualClock())
    gone.stream.set_footer("▸ `delegate_task` · working: step 1", alone=True)
    await run_until(gone.clock, lambda: bool(gone.surface.texts()))
    await gone.finish()
    assert gone.surface.texts() == []  # no text ever came: the activity line went with the run


async def test_no_text_posts_nothing_and_a_notice_posts_alone() -> None:
    quiet = Thread(ManualClock())
    quiet.stream.append("  \n")
    await quiet.finish()
    assert quiet.surface.calls == []

    failed = Thread(ManualClock(), stop=True)
    await failed.finish("⚠️ The model is unreachable.")
    assert failed.surface.texts() == ["⚠️ The model is unreachable."]
    assert failed.posted == [], "a reply final at its first post shows no button: nothing to record"


async def test_finish_is_idempotent_and_append_after_it_is_refused() -> None:
    thread = Thread(ManualClock())
    thread.stream.append("done")
    await thread.finish()
    await thread.finish("ignored")
    assert thread.surface.texts() == ["done"]
    with pytest.raises(RuntimeError):
        thread.stream.append("late")


async def test_a_platform_that_keeps_failing_makes_finish_raise() -> None:
    thread = Thread(ManualClock())
    thread.stream.append("hello")
    await settle()
    for _ in range(3):
        thread.surface.fail_next(lambda: SurfaceError("internal error"))
    with pytest.raises(SurfaceError, match="internal error"):
        await thread.finish(" world")


async def test_aclose_stops_the_flusher_mid_wait() -> None:
    thread = Thread(ManualClock())
    thread.stream.append("a")
    await settle()
    thread.stream.append("b")
    await settle()
    assert thread.clock.sleepers == 1  # waiting for the edit interval
    await thread.stream.aclose()
    assert thread.clock.sleepers == 0


async def test_five_streams_share_a_budget_fairly_and_finals_go_first() -> None:
    clock = ManualClock()
    limits = SurfaceLimits(2000, 1.0, 10, "workspace")
    budget = EditBudget(clock, 10)
    ledger = EditLedger()
    threads = [Thread(clock, limits, budget, ledger=ledger, thread_key=f"t{i}") for i in range(5)]

    for i, thread in enumerate(threads):
        thread.stream.append(f"stream {i}")
    await settle()
    assert [t.surface.texts() for t in threads] == [[f"stream {i}"] for i in range(5)]

    for thread in threads:
        thread.stream.append(" continues")
    await run_until(
        clock, lambda: all(t.surface.edit_count() == 1 for t in threads), step=0.5, limit=40
    )
    first_round = sorted((t.surface.calls[-1].at, i) for i, t in enumerate(threads))
    assert [i for _, i in first_round] == [0, 1, 2, 3, 4], "each stream had its turn, in order"
    gaps = [b[0] - a[0] for a, b in zip(first_round, first_round[1:], strict=False)]
    assert all(gap >= 6.0 - 1e-9 for gap in gaps)

    for thread in threads[:3]:
        thread.stream.append(" further")  # interim edits queue up
    await run_until(clock, lambda: len(budget.scheduler) == 3, step=0.5)
    mark = clock.monotonic()
    async with asyncio.TaskGroup() as tg:
        finals = [tg.create_task(t.stream.finish(" — done")) for t in threads[3:]]
        await run_until(clock, lambda: all(f.done() for f in finals), step=0.5, limit=60)
        await run_until(
            clock, lambda: all(t.surface.edit_count() == 2 for t in threads[:3]), step=0.5
        )
        for thread in threads[:3]:
            tg.create_task(thread.stream.finish())
        await run_until(clock, lambda: len(budget.scheduler) == 0 and clock.sleepers == 0, step=0.5)

    later = sorted(
        (c.at, i)
        for i, t in enumerate(threads)
        for c in t.surface.calls
        if c.op == "edit" and c.at > mark
    )
    assert [i for _, i in later] == [3, 4, 0, 1, 2]
    assert ledger.violations == 0
    assert sum(t.surface.count("edit", "SurfaceRateLimited") for t in threads) == 0
    assert [t.surface.texts() for t in threads] == [
        ["stream 0 continues further"],
        ["stream 1 continues further"],
        ["stream 2 continues further"],
        ["stream 3 continues — done"],
        ["stream 4 continues — done"],
    ]


async def test_a_final_the_budget_would_hold_back_is_posted_anew_and_the_draft_deleted() -> None:
    clock = ManualClock()
    limits = replace(DEFAULT_LIMITS, edits_per_minute=6.0, fresh_final_after=1.0)  # 10 s apart
    sweeper = DraftSweeper(clock)
    thread = Thread(clock, limits)
    thread.stream = ReplyStream(
        thread.surface,
        clock,
        EditBudget(clock, 6.0),
        thread.record,
        lambda draft: sweeper.discard(thread.surface, draft),
    )
    words = [f"w{i} " for i in range(40)]
    await thread.feed(words, every=0.05)  # 2 s: the draft is posted and edited once
    draft = next(c.message_id for c in thread.surface.calls if c.op == "post")
    before = clock.monotonic()
    await thread.finish()

    assert clock.monotonic() - before < 1.0, "the final did not wait for the edit budget"
    assert thread.surface.texts()[-1] == "".join(words).rstrip()
    await drive(clock, sweeper.idle(), step=0.5)
    assert thread.surface.texts() == ["".join(words).rstrip()], "one copy, the draft is gone"
    assert thread.surface.messages[draft].deleted


async def test_a_final_the_budget_can_land_soon_is_an_edit() -> None:
    clock = ManualClock()
    limits = replace(DEFAULT_LIMITS, edits_per_minute=60.0, fresh_final_after=2.0)
    thread = Thread(clock, limits)
    thread.stream = ReplyStream(
        thread.surface,
        clock,
        EditBudget(clock, 60.0),
        thread.record,
        lambda draft: pytest.fail(f"draft {draft} should have been edited"),
    )
    await thread.feed([f"w{i} " for i in range(40)], every=0.05)
    await thread.finish()
    assert thread.surface.count("post") == 1 and thread.surface.count("delete") == 0


async def test_drafts_are_deleted_within_the_delete_budget_and_after_429s() -> None:
    clock = ManualClock()
    limits = replace(DEFAULT_LIMITS, deletes_per_minute=30.0)  # 2 s apart
    surface = RecordingSurface(clock, limits)
    ids = [await surface.post(f"draft {i}") for i in range(3)]
    surface.rate_limit_next(1, 5.0, ops=("delete",))
    sweeper = DraftSweeper(clock)
    for message_id in ids:
        sweeper.discard(surface, message_id)
    await drive(clock, sweeper.idle(), step=0.25)

    assert surface.live() == []
    deletes = [c for c in surface.calls if c.op == "delete"]
    assert [c.outcome for c in deletes] == ["SurfaceRateLimited", "ok", "ok", "ok"]
    assert deletes[1].at - deletes[0].at >= 5.0, "the Retry-After was honoured"
    assert all(b.at - a.at >= 2.0 - 1e-9 for a, b in zip(deletes[1:], deletes[2:], strict=False))


async def test_a_reply_that_ends_while_waiting_for_its_first_post_posts_only_its_final() -> None:
    clock = ManualClock()
    limits = replace(DEFAULT_LIMITS, posts_per_minute=60.0, post_window=1, post_key="test:posts")
    posts = EditBudget(clock, 60.0, platform=None, window=1)  # one post a second in the channel
    other = Thread(clock, limits)
    thread = Thread(clock, limits)
    for t in (other, thread):
        t.stream = ReplyStream(t.surface, clock, EditBudget(clock, None), t.record, None, posts)
    other.stream.append("The other thread's first words")
    await settle()
    thread.stream.append("First words")  # its post waits for the channel's next second
    await settle()
    thread.stream.append(", and the rest.")
    await thread.finish()
    assert thread.surface.texts() == ["First words, and the rest."]
    assert [c.op for c in thread.surface.calls] == ["post"], "no draft: the first post is the final"
    await other.stream.aclose()


async def test_a_draft_rate_limited_again_and_again_is_deleted_in_the_end() -> None:
    clock = ManualClock()
    limits = replace(DEFAULT_LIMITS, deletes_per_minute=60.0, delete_burst=3)
    surface = RecordingSurface(clock, limits)
    ids = [await surface.post(f"draft {i}") for i in range(3)]
    surface.rate_limit_next(8, 0.5, ops=("delete",))
    sweeper = DraftSweeper(clock)
    for message_id in ids:
        sweeper.discard(surface, message_id)
    await drive(clock, sweeper.idle(), step=0.25)
    assert surface.live() == [], "a rate limit never leaves a draft behind"


async def test_drafts_of_a_busy_moment_are_deleted_at_once_within_the_burst() -> None:
    clock = ManualClock()
    limits = replace(DEFAULT_LIMITS, deletes_per_minute=30.0, delete_burst=3)  # then 2 s apart
    surface = RecordingSurface(clock, limits)
    ids = [await surface.post(f"draft {i}") for i in range(4)]
    sweeper = DraftSweeper(clock)
    for message_id in ids:
        sweeper.discard(surface, message_id)
    await drive(clock, sweeper.idle(), step=0.25)
    deletes = [c.at for c in surface.calls if c.op == "delete"]
    assert deletes[:3] == [0.0, 0.0, 0.0] and deletes[3] >= 2.0 - 1e-9
