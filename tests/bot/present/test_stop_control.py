"""Stop from a run's first second to its end, and nothing of it after: "Working…" with Stop on
the reply, a control message beside a native stream, and what a crash left mended from the
records alone."""

from __future__ import annotations

from bot.api.surface import Button
from bot.engine.events import EngineEvent, Finished, ModelCallStarted, TextDelta
from bot.infra.clock import ManualClock
from bot.llm.messages import Usage
from bot.present.budget import BudgetRegistry, EditBudget
from bot.present.mend import NOTE, mend
from bot.present.presenter import WORKING, WORKING_AFTER, Presenter
from bot.sessions.model import LiveMessage, PanelRef
from tests.bot.present.test_native import Streams
from tests.fakes.surface import RecordingSurface, drive, run_until, settle

STOP = Button("stop:run1", "Stop", "danger")


class Run:
    """A presenter as the supervisor builds it, with the records a restart would mend."""

    def __init__(self, *, native: bool = False) -> None:
        self.clock = ManualClock()
        self.surface = RecordingSurface(self.clock, strict=True)
        self.streams = Streams(self.surface) if native else None
        if self.streams is not None:
            self.surface.streams = self.streams  # type: ignore[attr-defined]
        self.live: dict[str, LiveMessage] = {}
        self.presenter = Presenter(
            self.surface,
            self.clock,
            BudgetRegistry(self.clock),
            None,
            self.persist,
            self.record,
            stop_button=STOP,
        )

    async def persist(self, ref: PanelRef | None) -> None:
        return None

    async def record(self, message_id: str, live: LiveMessage | None) -> None:
        if live is None:
            self.live.pop(message_id, None)
        else:
            if message_id not in self.live and not live.stream:
                shown = self.surface.messages[message_id]
                assert shown.buttons == (), "recorded before it shows the button"
            self.live[message_id] = live

    async def send(self, event: EngineEvent) -> None:
        await drive(self.clock, self.presenter(event), step=0.1)

    def with_stop(self) -> list[str]:
        return [m.text for m in self.surface.live() if STOP in m.buttons]

    async def close(self) -> None:
        await drive(self.clock, self.presenter.close(), step=0.1)


async def test_a_silent_run_shows_working_with_stop_within_its_first_seconds() -> None:
    run = Run()
    await run.send(ModelCallStarted(1))
    await run_until(run.clock, lambda: run.with_stop() == [WORKING], limit=WORKING_AFTER + 2.5)
    assert run.live == {"m1": LiveMessage("m1", "")}, "nothing of the answer: a restart deletes it"
    await run.send(TextDelta("The answer."))
    await run_until(run.clock, lambda: run.with_stop() == ["The answer."])
    assert run.live == {"m1": LiveMessage("m1", "The answer.")}, "the text, kept before it shows"
    await run.send(Finished(Usage()))
    await run.close()
    assert run.surface.texts() == ["The answer."] and run.with_stop() == []
    assert run.live == {}


async def test_a_quick_answer_comes_as_its_own_post_without_working() -> None:
    run = Run()
    await run.send(ModelCallStarted(1))
    await run.send(TextDelta("Quick."))
    await run.send(Finished(Usage()))
    await run.close()
    await run.clock.advance(WORKING_AFTER * 3)
    assert run.surface.texts() == ["Quick."]
    assert all(c.text != WORKING for c in run.surface.calls)


async def test_a_run_that_shows_nothing_leaves_nothing() -> None:
    run = Run()
    await run.send(ModelCallStarted(1))
    await run_until(run.clock, lambda: run.with_stop() == [WORKING], limit=5)
    await run.send(Finished(Usage()))
    await run.close()
    assert run.surface.texts() == [] and run.live == {}


async def test_beside_a_native_stream_a_control_message_carries_stop_until_the_end() -> None:
    run = Run(native=True)
    await run.send(ModelCallStarted(1))
    await run.send(TextDelta("Streamed words"))
    await run_until(run.clock, lambda: bool(run.with_stop()), limit=5)
    assert run.streams is not None and len(run.streams.open) == 1
    stream = next(iter(run.streams.open))
    control = next(m for m in run.surface.live() if STOP in m.buttons)
    assert control.text == WORKING and stream != control.id
    assert run.live == {
        stream: LiveMessage(stream, None, stream=True),
        control.id: LiveMessage(control.id, ""),
    }
    await run.send(TextDelta(", more of them."))
    await run.send(Finished(Usage()))
    await run.close()
    assert run.surface.texts() == ["Streamed words, more of them."], "the control went"
    assert run.streams.open == set() and run.live == {}


async def test_a_native_run_silent_for_a_second_shows_the_control_before_any_stream() -> None:
    run = Run(native=True)
    await run.send(ModelCallStarted(1))
    await run_until(run.clock, lambda: run.with_stop() == [WORKING], limit=WORKING_AFTER + 2.5)
    assert run.streams is not None and run.streams.open == set()
    await run.send(Finished(Usage()))
    await run.close()
    assert run.surface.texts() == []


async def test_mend_puts_every_kind_of_live_message_to_rest() -> None:
    clock = ManualClock()
    surface = RecordingSurface(clock)
    streams = Streams(surface)
    surface.streams = streams  # type: ignore[attr-defined]
    reply = await surface.post("Half of an", (STOP,))
    working = await surface.post(WORKING, (STOP,))
    stream = await streams.start("Streamed half", (), None)
    assert stream is not None
    old = await surface.post("From an older version", (STOP,))
    budget = EditBudget(clock, None)
    for live in (
        LiveMessage(reply, "Half of an"),
        LiveMessage(working, ""),
        LiveMessage(stream, None, stream=True),
        LiveMessage(old, None),
    ):
        await drive(clock, mend(surface, live, budget))
    await settle()
    assert surface.texts() == [
        f"Half of an\n\n{NOTE}",
        f"Streamed half\n\n{NOTE}",
        "From an older version",
    ]
    assert all(m.buttons == () for m in surface.live()) and streams.open == set()


async def test_mend_leaves_a_message_that_is_gone_or_a_stream_that_expired() -> None:
    clock = ManualClock()
    surface = RecordingSurface(clock)
    streams = Streams(surface)
    surface.streams = streams  # type: ignore[attr-defined]
    gone = await surface.post("Gone", (STOP,))
    surface.refuse_edits(gone)
    expired = await surface.post("Expired stream")
    budget = EditBudget(clock, None)
    await drive(clock, mend(surface, LiveMessage(gone, "Gone"), budget))
    await drive(clock, mend(surface, LiveMessage(expired, None, stream=True), budget))
    assert surface.texts() == ["Gone", "Expired stream"]


async def test_mend_waits_out_a_rate_limit() -> None:
    clock = ManualClock()
    surface = RecordingSurface(clock, strict=True)
    reply = await surface.post("Words", (STOP,))
    surface.rate_limit_next(1, retry_after=5.0)
    await drive(clock, mend(surface, LiveMessage(reply, "Words"), EditBudget(clock, None)))
    assert surface.texts() == [f"Words\n\n{NOTE}"]
    assert surface.ledger.violations == 0
