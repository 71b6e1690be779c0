"""A reply on a surface with native streams: appends within their budgets, rollover before a
stream gets too old or too long, and edits taking over on any failure, ending exact."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.api.surface import StreamLimits, StreamTask
from bot.errors import MessageTooLong, SurfaceError, SurfaceRateLimited
from bot.infra.clock import ManualClock
from bot.present.budget import BudgetRegistry
from bot.present.native import NativeReply
from bot.present.reply import ReplyStream
from tests.fakes.surface import DEFAULT_LIMITS, RecordingSurface, drive, settle

LIMITS = StreamLimits(
    budget_key="test:stream",
    starts_per_minute=20,
    appends_per_minute=120,
    stops_per_minute=20,
    max_chars=200,
    max_age=60.0,
)


@dataclass
class Streams:
    """Native streams kept in the recording surface's messages: appended, stopped, scripted to fail."""

    surface: RecordingSurface
    stream_limits: StreamLimits = LIMITS
    open: set[str] = field(default_factory=set)
    tasks: dict[str, StreamTask] = field(default_factory=dict)
    plans: list[str] = field(default_factory=list)
    failures: list[SurfaceError] = field(default_factory=list)
    offered: bool = True
    calls: list[tuple[str, float]] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def start(self, text: str, tasks: Sequence[StreamTask], plan: str | None) -> str | None:
        self._enter("start")
        if not self.offered:
            return None
        stream = await self.surface.post(text)
        self.open.add(stream)
        self._note(tasks, plan)
        return stream

    async def append(
        self, stream_id: str, text: str, tasks: Sequence[StreamTask], plan: str | None
    ) -> None:
        self._enter("append")
        if stream_id not in self.open:
            raise SurfaceError("message_not_in_streaming_state")
        message = self.surface.messages[stream_id]
        message.text += text
        self._note(tasks, plan)

    async def stop(self, stream_id: str, text: str = "") -> None:
        self._enter("stop")
        if stream_id not in self.open:
            raise SurfaceError("message_not_in_streaming_state")
        self.surface.messages[stream_id].text += text
        self.open.discard(stream_id)

    def _enter(self, op: str) -> None:
        self.calls.append((op, self.surface.clock.monotonic()))
        if self.failures:
            raise self.failures.pop(0)

    def _note(self, tasks: Sequence[StreamTask], plan: str | None) -> None:
        self.tasks |= {t.id: t for t in tasks}
        if plan is not None:
            self.plans.append(plan)


class Thread:
    def __init__(self, limits: StreamLimits = LIMITS) -> None:
        self.clock = ManualClock()
        self.surface = RecordingSurface(self.clock, DEFAULT_LIMITS, strict=True)
        self.streams = Streams(self.surface, limits)
        budgets = BudgetRegistry(self.clock)
        edits = ReplyStream(self.surface, self.clock, budgets.get(DEFAULT_LIMITS))
        self.reply = NativeReply(self.surface, self.streams, self.clock, budgets, edits)

    async def feed(self, pieces: list[str], every: float) -> None:
        for piece in pieces:
            self.reply.append(piece)
            await settle()
            await self.clock.advance(every)

    async def finish(self) -> None:
        await drive(self.clock, self.reply.finish(), step=0.1)

    def ops(self, name: str) -> int:
        return sum(1 for op, _ in self.streams.calls if op == name)


WORDS = [f"w{i} " for i in range(30)]
TEXT = "".join(WORDS).rstrip()


async def test_text_streams_in_appends_and_the_stream_is_stopped_at_the_end() -> None:
    thread = Thread()
    await thread.feed(WORDS, every=0.1)
    await thread.finish()
    assert thread.surface.texts() == [TEXT]
    assert thread.streams.open == set()
    assert thread.ops("start") == 1 and 1 <= thread.ops("append") <= 4, "appends are coalesced"
    assert thread.surface.count("edit") == 0
    assert thread.reply.streaming


async def test_task_cards_and_the_plan_go_along() -> None:
    thread = Thread()
    await thread.feed(["Looking."], every=0.1)
    thread.reply.set_task(StreamTask("call-1", "`grep`", "in_progress"))
    thread.reply.set_plan("Plan · 0/1 done", [StreamTask("todo-0", "Find it", "in_progress")])
    await thread.feed([" Found."], every=2.0)
    thread.reply.set_task(StreamTask("call-1", "`grep`", "complete"))
    await thread.finish()
    assert thread.streams.tasks["call-1"].status == "complete"
    assert thread.streams.tasks["todo-0"].title == "Find it"
    assert thread.streams.plans == ["Plan · 0/1 done"]
    assert thread.surface.texts() == ["Looking. Found."]


async def test_a_long_answer_rolls_over_to_new_streams() -> None:
    thread = Thread()
    pieces = [f"word{i:03d} " for i in range(60)]  # 480 characters, 200 a stream
    await thread.feed(pieces, every=0.1)
    await thread.finish()
    texts = thread.surface.texts()
    assert len(texts) >= 3 and all(len(t) <= 200 for t in texts)
    assert "".join(texts) == "".join(pieces).rstrip()
    assert thread.streams.open == set() and thread.ops("stop") == len(texts)


async def test_a_stream_rolls_over_before_it_gets_too_old() -> None:
    thread = Thread(StreamLimits("test:stream", 20, 120, 20, max_chars=10_000, max_age=5.0))
    await thread.feed([f"w{i} " for i in range(20)], every=0.5)  # 10 s
    await thread.finish()
    assert len(thread.surface.texts()) >= 2
    assert "".join(thread.surface.texts()) == "".join(f"w{i} " for i in range(20)).rstrip()


async def test_an_expired_stream_is_finished_by_editing_the_same_message() -> None:
    thread = Thread()
    await thread.feed(WORDS[:10], every=0.1)
    thread.streams.open.clear()  # expired: message_not_in_streaming_state
    await thread.feed(WORDS[10:], every=0.1)
    await thread.finish()
    assert thread.surface.texts() == [TEXT], "the same message, exact"
    assert thread.surface.count("edit") >= 1
    assert not thread.reply.streaming


async def test_a_too_long_append_hands_over_to_edits_which_split() -> None:
    thread = Thread()
    await thread.feed(["Start."], every=0.1)
    thread.streams.failures.append(MessageTooLong("msg_too_long"))
    await thread.feed([" more"] * 5, every=1.5)
    await thread.finish()
    assert thread.surface.texts() == ["Start." + " more" * 5]
    assert not thread.reply.streaming


async def test_where_streams_are_not_offered_the_reply_is_edited_from_the_start() -> None:
    thread = Thread()
    thread.streams.offered = False
    await thread.feed(WORDS, every=0.1)
    await thread.finish()
    assert thread.surface.texts() == [TEXT]
    assert thread.surface.count("post") == 1 and thread.ops("append") == 0


async def test_a_429_on_an_append_is_waited_out_and_the_text_still_streams() -> None:
    thread = Thread()
    await thread.feed(WORDS[:5], every=0.1)
    thread.streams.failures.append(SurfaceRateLimited(3.0))
    await thread.feed(WORDS[5:], every=0.1)
    await thread.finish()
    assert thread.surface.texts() == [TEXT]
    assert thread.reply.streaming, "a rate limit is no reason to stop streaming"
    refused_at = next(at for op, at in thread.streams.calls if op == "append")
    later = [at for op, at in thread.streams.calls if op == "append" and at > refused_at]
    assert later and min(later) >= refused_at + 3.0, "the Retry-After was honoured"


async def test_a_rate_limited_start_goes_to_edits_at_once() -> None:
    thread = Thread()
    thread.streams.failures.append(SurfaceRateLimited(30.0))
    await thread.feed(WORDS, every=0.1)
    assert thread.surface.texts(), "the first words did not wait for the start budget"
    await thread.finish()
    assert thread.surface.texts() == [TEXT]
