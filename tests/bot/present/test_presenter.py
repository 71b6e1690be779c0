"""The presenter as the engine's event sink: what the thread shows after a run."""

from __future__ import annotations

from bot.engine.events import (
    EngineEvent,
    Failed,
    Finished,
    ModelCallStarted,
    Notice,
    TextDelta,
    TodosChanged,
    ToolFinished,
    ToolStarted,
)
from bot.infra.clock import ManualClock
from bot.llm.messages import Usage
from bot.present.budget import BudgetRegistry
from bot.present.presenter import Presenter
from bot.present.todo_panel import content_hash, render_todos
from bot.sessions.model import LiveMessage, PanelRef, Todo
from tests.fakes.surface import RecordingSurface, drive, run_until, settle

PLAN = (Todo(content="Look", status="in_progress"), Todo(content="Answer"))
DONE = (Todo(content="Look", status="completed"), Todo(content="Answer", status="completed"))


class Run:
    def __init__(self, panel: PanelRef | None = None) -> None:
        self.clock = ManualClock()
        self.surface = RecordingSurface(self.clock, strict=True)
        self.panel = panel
        self.posted: list[str] = []
        self.presenter = Presenter(
            self.surface, self.clock, BudgetRegistry(self.clock), panel, self.persist, self.record
        )

    async def persist(self, ref: PanelRef | None) -> None:
        self.panel = ref

    async def record(self, message_id: str, live: LiveMessage | None) -> None:
        self.posted.append(message_id)

    async def play(self, *events: EngineEvent) -> None:
        """Send events as the engine does, a little time apart, then close as the core does."""
        try:
            for event in events:
                await drive(self.clock, self.presenter(event), step=0.1)
                await self.clock.advance(0.2)
        finally:
            await drive(self.clock, self.presenter.close(), step=0.1)


async def test_a_run_with_tools_and_todos_ends_with_the_exact_answer_and_the_panel() -> None:
    run = Run()
    await run.play(
        ModelCallStarted(1),
        TodosChanged(PLAN),
        ToolStarted("c1", "grep", "{}"),
        ToolFinished("c1", "grep", False),
        ModelCallStarted(2),
        TextDelta("I looked"),
        TextDelta(" around."),
        ToolStarted("c2", "todo_write", "{}"),
        TodosChanged(DONE),
        ToolFinished("c2", "todo_write", False),
        ModelCallStarted(3),
        TextDelta("All done."),
        Finished(Usage()),
    )
    reply = [m for m in run.surface.live() if m.id != run.panel.message_id] if run.panel else []
    assert [m.text for m in reply] == ["I looked around.\n\nAll done."]
    assert run.posted == [], "without a Stop button no message id needs recording"
    panel = run.surface.messages[run.panel.message_id] if run.panel else None
    assert panel is not None and panel.text == render_todos(DONE, 2000)
    assert run.panel == PanelRef(panel.id, content_hash(panel.text), False)
    assert run.surface.pinned_ids == []
    assert run.surface.status_history == ["thinking…", "running grep…", "thinking…", None]
    assert run.surface.status is None


async def test_tool_footer_shows_while_a_tool_runs_after_text() -> None:
    run = Run()
    await run.presenter(ModelCallStarted(1))
    await run.presenter(TextDelta("Checking."))
    await run.presenter(ToolStarted("c1", "fetch_page", "{}"))
    await run_until(
        run.clock, lambda: run.surface.texts() == ["Checking.\n\n_running `fetch_page`…_"], limit=5
    )
    await run.presenter(ToolFinished("c1", "fetch_page", False))
    await run.play(ModelCallStarted(2), TextDelta("Found."), Finished(Usage()))
    assert run.surface.texts() == ["Checking.\n\nFound."]


async def test_failure_is_appended_to_partial_text() -> None:
    run = Run()
    await run.play(
        ModelCallStarted(1),
        TextDelta("Half an ans"),
        Failed("The model stopped answering. Try again."),
    )
    assert run.surface.texts() == ["Half an ans\n\n⚠️ The model stopped answering. Try again."]


async def test_failure_without_text_is_posted_alone() -> None:
    run = Run()
    await run.play(ModelCallStarted(1), Failed("No model is configured."))
    assert run.surface.texts() == ["⚠️ No model is configured."]
    assert run.surface.status is None


async def test_notices_are_set_apart_in_italics() -> None:
    run = Run()
    await run.play(
        Notice("Your message was cut."),
        ModelCallStarted(1),
        TextDelta("Answer."),
        Finished(Usage()),
    )
    assert run.surface.texts() == ["_Your message was cut._\n\nAnswer."]


async def test_an_existing_panel_with_the_same_list_is_left_alone() -> None:
    text = render_todos(PLAN, 2000)
    first = Run()
    await first.play(ModelCallStarted(1), TodosChanged(PLAN), TextDelta("ok"), Finished(Usage()))
    assert first.panel == PanelRef("m1", content_hash(text), True)

    again = Run(first.panel)
    again.surface.messages.update(first.surface.messages)
    await again.play(
        ModelCallStarted(1), TodosChanged(PLAN), TextDelta("still ok"), Finished(Usage())
    )
    assert again.surface.count("post") == 1, "only the reply is posted"
    assert again.surface.count("edit") == 0
    assert again.panel == first.panel


async def test_close_lands_the_text_of_a_run_that_stopped_without_an_ending() -> None:
    run = Run()
    await run.presenter(ModelCallStarted(1))
    await run.presenter(TextDelta("Partial"))
    await run.presenter(TextDelta(" words"))
    await settle()
    await drive(run.clock, run.presenter.close(), step=0.1)
    await drive(run.clock, run.presenter.close(), step=0.1)
    assert run.surface.texts() == ["Partial words"]
    assert run.clock.sleepers == 0
