"""The todo panel: one message, pinned while work is open, edited in place, restart-safe."""

from __future__ import annotations

from dataclasses import replace

from bot.api.surface import SurfaceLimits
from bot.infra.clock import ManualClock
from bot.present.budget import EditBudget
from bot.present.todo_panel import TodoPanel, content_hash, render_todos
from bot.sessions.model import PanelRef, Todo, TodoStatus, stopped
from tests.fakes.surface import DEFAULT_LIMITS, RecordingSurface, drive, settle


def todos(*pairs: tuple[str, TodoStatus]) -> tuple[Todo, ...]:
    return tuple(Todo(content=c, status=s) for c, s in pairs)


PLAN = todos(("Read the code", "completed"), ("Fix the bug", "in_progress"), ("Ship it", "pending"))
DONE = todos(("Read the code", "completed"), ("Fix the bug", "completed"), ("Ship it", "completed"))


class Harness:
    """A panel over a recording surface, with the store's copy of its PanelRef."""

    def __init__(
        self, panel: PanelRef | None = None, limits: SurfaceLimits = DEFAULT_LIMITS
    ) -> None:
        self.clock = ManualClock()
        self.surface = RecordingSurface(self.clock, limits, strict=True)
        self.stored: PanelRef | None = panel
        self.persisted = 0
        self.panel = self.new_panel()

    def new_panel(self) -> TodoPanel:
        return TodoPanel(
            self.surface,
            self.stored,
            self.persist,
            clock=self.clock,
            budget=EditBudget(self.clock, 50),
        )

    async def persist(self, ref: PanelRef | None) -> None:
        self.stored = ref
        self.persisted += 1

    async def show(self, items: tuple[Todo, ...]) -> None:
        await self.panel.update(items)
        await drive(self.clock, self.panel.flush(), step=0.1)


def test_render_marks_each_status_and_counts() -> None:
    assert (
        render_todos(PLAN, 2000)
        == "**Plan** · 1/3 done\n✅ Read the code\n▶ Fix the bug\n☐ Ship it"
    )
    assert "empty" in render_todos((), 2000)
    many = tuple(Todo(content=f"item {i} " + "x" * 400) for i in range(30))
    text = render_todos(many, 2000)
    assert len(text) <= 2000
    assert text.endswith("more")


async def test_a_cancelled_item_is_not_done_and_leaves_nothing_open() -> None:
    """A step dropped undone (denied, failed, stopped) is counted apart and unpins the plan."""
    dropped = todos(("Read the code", "completed"), ("Fix the bug", "cancelled"))
    assert render_todos(dropped, 2000) == (
        "**Plan** · 1/2 done, 1 cancelled\n✅ Read the code\n✖️ Fix the bug"
    )
    assert stopped(PLAN) == todos(
        ("Read the code", "completed"), ("Fix the bug", "cancelled"), ("Ship it", "cancelled")
    )
    h = Harness()
    await h.show(PLAN)
    assert h.surface.pinned_ids == ["m1"]
    await h.show(stopped(PLAN))
    assert h.surface.pinned_ids == []
    assert h.surface.texts() == [render_todos(stopped(PLAN), 2000)]


async def test_panel_is_posted_once_pinned_edited_and_unpinned_when_done() -> None:
    h = Harness()
    await h.show(PLAN)
    assert h.surface.texts() == [render_todos(PLAN, 2000)]
    assert h.surface.pinned_ids == ["m1"]
    assert h.stored == PanelRef("m1", content_hash(render_todos(PLAN, 2000)), True)
    assert h.persisted == 2, "persisted when posted, then when pinned"

    await h.show(DONE)
    assert h.surface.texts() == [render_todos(DONE, 2000)]
    assert h.surface.pinned_ids == []
    assert h.stored is not None and not h.stored.pinned
    assert h.stored.content_hash == content_hash(render_todos(DONE, 2000))
    assert h.surface.count("post") == 1


async def test_rapid_updates_are_coalesced_to_the_newest_list() -> None:
    h = Harness()
    await h.show(PLAN)
    for i in range(10):
        await h.panel.update(
            todos(*[(f"step {j}", "completed" if j < i else "pending") for j in range(10)])
        )
        await settle()
        await h.clock.advance(0.05)
    await drive(h.clock, h.panel.flush(), step=0.1)

    newest = render_todos(
        todos(*[(f"step {j}", "completed" if j < 9 else "pending") for j in range(10)]), 2000
    )
    assert h.surface.texts() == [newest]
    assert h.surface.edit_count("m1") <= 2
    assert h.surface.count("edit", "SurfaceRateLimited") == 0


async def test_a_restart_with_the_same_list_posts_no_second_panel() -> None:
    h = Harness()
    await h.show(PLAN)
    calls_before = len(h.surface.calls)

    persisted_before = h.persisted
    h.panel = h.new_panel()  # a new process: the panel comes from the store
    await h.show(PLAN)
    assert len(h.surface.calls) == calls_before
    assert h.persisted == persisted_before
    assert h.surface.count("post") == 1

    await h.show(DONE)
    assert h.surface.count("post") == 1
    assert h.surface.texts() == [render_todos(DONE, 2000)]


async def test_a_refused_edit_reposts_the_panel_and_moves_the_pin() -> None:
    h = Harness()
    await h.show(PLAN)
    h.surface.refuse_edits("m1")
    changed = todos(
        ("Read the code", "completed"), ("Fix the bug", "completed"), ("Ship it", "in_progress")
    )
    await h.show(changed)

    assert h.surface.texts() == [render_todos(changed, 2000)]
    assert h.surface.messages["m1"].deleted
    assert h.surface.pinned_ids == ["m2"]
    assert h.stored == PanelRef("m2", content_hash(render_todos(changed, 2000)), True)


async def test_an_empty_list_says_so_and_unpins() -> None:
    h = Harness()
    await h.show(PLAN)
    await h.show(())
    assert h.surface.texts() == [render_todos((), 2000)]
    assert h.surface.pinned_ids == []

    fresh = Harness()
    await fresh.show(())
    assert fresh.surface.calls == [], "no panel is posted for an empty plan"


async def test_without_pin_support_or_permission_the_panel_still_works() -> None:
    h = Harness(limits=replace(DEFAULT_LIMITS, can_pin=False))
    await h.show(PLAN)
    assert h.surface.texts() == [render_todos(PLAN, 2000)]
    assert h.surface.count("pin") == 0

    denied = Harness()
    denied.surface.fail_pins()
    await denied.show(PLAN)
    await denied.show(todos(("Read the code", "in_progress")))
    assert denied.surface.texts() == [render_todos(todos(("Read the code", "in_progress")), 2000)]
    assert denied.surface.count("pin", "SurfaceError") == 1, "a refused pin is not retried"
    assert denied.stored is not None and not denied.stored.pinned


async def test_rate_limited_panel_edit_is_retried_after_the_wait() -> None:
    h = Harness()
    await h.show(PLAN)
    h.surface.rate_limit_next(2, retry_after=2.0)
    await h.show(DONE)
    assert h.surface.texts() == [render_todos(DONE, 2000)]
    assert h.surface.ledger.violations == 0
